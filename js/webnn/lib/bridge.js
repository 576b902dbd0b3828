'use strict';
// The connection to the Estuary worker (python -m estuary.js_worker): one child process per Node
// process, started by the first createContext(), speaking the length-prefixed frames described
// in python/estuary/js_worker.py. The child does not keep Node alive: it is referenced only while
// a reply is awaited.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

function pythonExecutable() {
  if (process.env.ESTUARY_PYTHON) return process.env.ESTUARY_PYTHON;
  const venv = path.resolve(__dirname, '..', '..', '..', '.venv', 'bin', 'python');
  return fs.existsSync(venv) ? venv : 'python3';
}

class Bridge {
  constructor() {
    this.child = spawn(pythonExecutable(), ['-m', 'estuary.js_worker'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.pending = new Map(); // id -> {resolve, reject}
    this.nextId = 1;
    this.chunks = [];
    this.buffered = 0;
    this.dead = null; // an Error once the worker is gone
    this.onLost = [];
    this.child.stdout.on('data', (chunk) => this._receive(chunk));
    this.child.on('error', (e) => this._die(`cannot start the Estuary worker (${pythonExecutable()}): ${e.message}`));
    this.child.on('exit', (code, signal) => this._die(`the Estuary worker exited (${signal || 'status ' + code})`));
    this.child.stdin.on('error', () => {});
    this._unref();
  }

  _ref() {
    this.child.ref();
    this.child.stdout.ref();
    this.child.stdin.ref?.();
  }

  _unref() {
    this.child.unref();
    this.child.stdout.unref();
    this.child.stdin.unref?.();
  }

  _die(message) {
    if (this.dead) return;
    this.dead = new DOMException(message, 'OperationError');
    for (const { reject } of this.pending.values()) reject(this.dead);
    this.pending.clear();
    for (const f of [...this.onLost]) f(message); // a copy: each listener removes itself
    if (bridge === this) bridge = null;
  }

  /** Write one frame: header (JSON) plus buffers (Uint8Arrays), no reply expected. */
  send(header, buffers = []) {
    if (this.dead) throw this.dead;
    const text = Buffer.from(JSON.stringify({ ...header, sizes: buffers.map((b) => b.byteLength) }, jsonNumbers)
      .replace(/"\\u0000(-?Infinity|NaN)"/g, '$1'));
    const head = Buffer.alloc(8);
    head.writeUInt32LE(text.length, 0);
    head.writeUInt32LE(buffers.reduce((n, b) => n + b.byteLength, 0), 4);
    const stdin = this.child.stdin;
    if (!this.corked) { // frames sent in one tick leave in one write (write + dispatch + read: one wake-up)
      this.corked = true;
      stdin.cork();
      process.nextTick(() => { this.corked = false; stdin.uncork(); });
    }
    stdin.write(head);
    stdin.write(text);
    for (const b of buffers) stdin.write(b);
  }

  /** Write one frame and wait for its reply: {header, buffers}. Failures reject with an Error whose
   * `estuaryName` is the Estuary error's class name. */
  request(header, buffers = []) {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this._ref();
      this.send({ ...header, id }, buffers);
    });
  }

  _receive(chunk) {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.buffered < 8) return;
      let data = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
      this.chunks = [data];
      const headLen = data.readUInt32LE(0);
      const bodyLen = data.readUInt32LE(4);
      if (data.length < 8 + headLen + bodyLen) return;
      const header = JSON.parse(data.toString('utf8', 8, 8 + headLen));
      const buffers = [];
      let at = 8 + headLen;
      for (const size of header.sizes || []) {
        // a copy into a fresh ArrayBuffer of its own (the caller owns it)
        const own = new Uint8Array(size);
        own.set(data.subarray(at, at + size));
        buffers.push(own);
        at += size;
      }
      data = data.subarray(8 + headLen + bodyLen);
      this.chunks = data.length ? [data] : [];
      this.buffered = data.length;
      const waiter = this.pending.get(header.id);
      if (!waiter) continue;
      this.pending.delete(header.id);
      if (this.pending.size === 0) this._unref();
      if (header.ok) {
        waiter.resolve({ header, buffers });
      } else {
        const e = new Error(header.error.message);
        e.estuaryName = header.error.name;
        waiter.reject(e);
      }
    }
  }
}

// JSON has no infinities; Python's json reads the bare tokens, so they are marked and unquoted
function jsonNumbers(key, value) {
  if (typeof value === 'number' && !Number.isFinite(value)) return '\u0000' + String(value);
  if (typeof value === 'bigint') return Number(value);
  return value;
}

let bridge = null;

/** The process's worker, started on first use (a new one if the previous one died). */
function getBridge() {
  if (!bridge) bridge = new Bridge();
  return bridge;
}

module.exports = { getBridge };
