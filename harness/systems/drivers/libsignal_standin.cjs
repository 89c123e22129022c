// Stand-in for libsignal (see openclaw_preload.cjs): every member is a function that throws if called.
module.exports = new Proxy({}, {
  get: (target, key) => (key === "__esModule" ? false : function () {
    throw new Error("libsignal stand-in: not available in this harness run");
  }),
});
