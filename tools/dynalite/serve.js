#!/usr/bin/env node
// serve.js runs the pinned dynalite as its own command line (cli.js) does,
// with the same options, and one difference: a client that hangs up in the
// middle of sending a request costs that request only. dynalite 4.0.0
// rethrows the request's error (httpHandler in its index.js), so a client
// killed while it wrote a request body (the replica tests SIGKILL `ebb
// serve` processes that are writing) ended the whole server, and every
// later test against it failed with refused connections.
'use strict'

process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET') {
    console.error('dynalite: a client hung up mid-request (%s); serving on', err.message)
    return
  }
  console.error(err)
  process.exit(1)
})

require('dynalite/cli.js')
