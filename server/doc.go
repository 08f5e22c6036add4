// Package server serves ebb's HTTP API: JSON over HTTP, one handler file per
// feature, plus /healthz and /metrics.
//
// The Server owns what every route shares: bearer-token auth decided before a
// handler runs, the mapping of errors onto API codes, panic recovery, request
// logging and metrics. A feature plugs in as a Feature that registers its
// routes with Route; its handlers return errors instead of writing them.
//
// The server takes features (the timeseries Service, lists, multitable, the
// Admin and UsageReporter interfaces), never a backend: nothing here names
// store/pebble, store/dynamo or store/cql, so every route behaves alike on
// every backend.
//
// One Handler serves two listeners (listen.go): net/http on the main
// address, and, with Options.HotAddr, fasthttp on the hot one (hot.go),
// behind a gate (hotgate.go) that reads each request head by net/http's
// rules, so that a request gets the same answer on either. Each listener
// holds a bounded number of connections (conns.go). Before a handler runs,
// Route admits the request into its class (read, write, admin) or sheds it
// with 503 and Retry-After (admission.go), checks the token, and refuses
// unknown query parameters; page reads also take a share of the
// process-wide response budget (respbudget.go) before they read anything,
// so the memory held by responses in flight is bounded.
package server
