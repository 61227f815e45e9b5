// Preloaded (node --require) by scripts/stdio-everything.sh 127.0.0.1:PORT: the
// reference server listens on every interface at the port it is given;
// here a server started with just a port is bound to 127.0.0.1 instead
// (port 0: a free one), and says where, as the tests read it:
// `listening on http://127.0.0.1:PORT/mcp`, alone on stdout (the server's
// own log lines go to stderr).
const net = require("node:net");

console.log = console.error;

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const [first] = args;
  const plain = typeof first === "number" || /^\d+$/.test(String(first));
  if (!plain) {
    return listen.apply(this, args);
  }
  const callback = args.find((arg) => typeof arg === "function");
  return listen.call(this, { port: Number(first), host: "127.0.0.1" }, () => {
    process.stdout.write(`listening on http://127.0.0.1:${this.address().port}/mcp\n`);
    if (callback) {
      callback();
    }
  });
};
