//! Whether a raced call's inner answer comes before the threshold, without
//! making the threshold's timer when the answer comes within a turn of the
//! scheduler: most fast calls do, and the timer (a handle on the time
//! driver, made and dropped unused) would cost them more than a second poll.
//!
//! | Runtime        | Between the two polls                          | Why |
//! |----------------|------------------------------------------------|-----|
//! | multi-threaded | the task woken at once, to the back of the run queue (`requeue`) | the handler the call spawned runs first, from the LIFO slot |
//! | current-thread | `tokio::task::yield_now`                       | the handler is queued behind this task; an immediate wake would poll too early |

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use futures_util::future::poll_immediate;
use tokio::time::{Instant, timeout_at};

/// The inner answer if it comes before `deadline`.
///
/// One poll, then one turn of the scheduler and a second poll, before the
/// timer: an inner server that answers within that turn (a fast call to
/// one that runs its handler as a task of its own, as rmcp does) never
/// needs the threshold's timer. Making it (a handle on the time driver) and
/// dropping it unused costs a fast call more than the second poll.
pub(super) async fn in_time<F: Future>(
    mut future: Pin<&mut F>,
    deadline: Instant,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    if let Some(output) = poll_immediate(future.as_mut()).await {
        return Ok(output);
    }
    scheduler_turn().await;
    if let Some(output) = poll_immediate(future.as_mut()).await {
        return Ok(output);
    }
    timeout_at(deadline, future).await
}

/// One turn of the scheduler for the inner server, before the raced call
/// polls it again.
///
/// A multi-threaded runtime runs the task a call just spawned (rmcp's
/// handler) first, from its LIFO slot: waking this task at once puts it
/// behind that one, and the answer is there at the next poll. Not
/// `tokio::task::yield_now`, which hands the waker to the scheduler to wake
/// only once the worker has run out of tasks and polled its driver: the
/// answer has usually woken the task by then, and the deferred wake polled
/// the whole connection's future once more for nothing, every call.
///
/// A current-thread runtime queues a spawned task behind this one, and
/// rmcp's handler is spawned by a task spawned by the call, so a wake at
/// once would poll too early and make the timer. There `yield_now`, which
/// waits until everything else has run, is still the cheaper of the two.
async fn scheduler_turn() {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let one_thread = Handle::try_current()
        .is_ok_and(|handle| handle.runtime_flavor() == RuntimeFlavor::CurrentThread);
    if one_thread {
        tokio::task::yield_now().await;
    } else {
        requeue().await;
    }
}

/// Pending once, with the task woken at once: it goes to the back of the
/// run queue.
fn requeue() -> impl Future<Output = ()> {
    let mut woken = false;
    std::future::poll_fn(move |cx| {
        if woken {
            return Poll::Ready(());
        }
        woken = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
}
