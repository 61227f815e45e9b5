//! The fixture with the layer's body types, without the layer: the
//! measured side of the HTTP benchmark's `twin` cases.
//!
//! The compiler makes one copy of a generic service's code per request body
//! type. Behind `TasksLayer` the fixture is called with a
//! `RequestBody<axum::body::Body>`; served bare, it runs a second copy of
//! the same code, for `axum::body::Body`. A server built with the layer has
//! only the first. A side-by-side run serves both routes from one process on
//! one core, so there the bare route's copy competes with the layered
//! route's for the same caches, which no deployment has. `adapted` gives the
//! fixture the layer's body types through two maps that do nothing else
//! (the response map makes axum's glue for the answer the layered route's
//! too). It is not the layer's path: the layer forwards a read body
//! (`RequestBody::buffered`) and may answer an SSE stream through bodies of
//! its own; this wraps the body as it streams in and answers as the fixture
//! does.

use http::{Request, Response};
use mcp_tasks::{RequestBody, ResponseBody};
use tower::ServiceBuilder;
use tower::util::{MapRequest, MapResponse};

/// The maps `adapted` puts around a service.
pub type Adapted<S, RB> = MapResponse<
    MapRequest<S, fn(Request<axum::body::Body>) -> Request<RequestBody<axum::body::Body>>>,
    fn(Response<RB>) -> Response<ResponseBody<RB>>,
>;

/// `service` called with the layer's request body type, its answer given
/// in the layer's response body type; nothing else changes.
pub fn adapted<S, RB>(service: S) -> Adapted<S, RB> {
    ServiceBuilder::new()
        .map_response((|response: Response<RB>| response.map(ResponseBody::inner)) as fn(_) -> _)
        .map_request(
            (|request: Request<axum::body::Body>| request.map(RequestBody::streaming))
                as fn(_) -> _,
        )
        .service(service)
}
