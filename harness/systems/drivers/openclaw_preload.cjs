// Preloaded (node --require) into a real OpenClaw CLI run by harness.systems.openclaw_agent.
//
// 1. libsignal: the conformance install replaces this git-URL dependency of a WhatsApp channel library with an
//    empty package; some releases still require('libsignal/src/...') while loading their plugins, which makes
//    the memory plugin fail to load.  Any libsignal module resolves to a stand-in that throws only if called
//    (memory search and the agent loop never call it).
// 2. A clock: HARNESS_FAKE_NOW_MS (epoch ms) makes Date.now() and `new Date()` start at that moment and run on
//    from there, so that a generated installation's sessions carry the dates its scenario gives them.
const Module = require("module");
const path = require("path");

const stub = path.join(__dirname, "libsignal_standin.cjs");
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === "libsignal" || request.startsWith("libsignal/")) return stub;
  return resolve.call(this, request, ...rest);
};

const target = Number(process.env.HARNESS_FAKE_NOW_MS || "");
if (Number.isFinite(target) && target > 0) {
  const RealDate = Date;
  const offset = target - RealDate.now();
  class ShiftedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(RealDate.now() + offset);
      else super(...args);
    }
    static now() {
      return RealDate.now() + offset;
    }
  }
  globalThis.Date = ShiftedDate;
}
