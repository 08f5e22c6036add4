// Package cost prices expiry: it estimates what a workload costs per month
// on DynamoDB and Amazon Keyspaces under each way of expiring data (native
// per-row TTL, ebb's time shards dropped whole, ebb's sweeper for rows with
// their own TTL, the sweeper over native TTL), and projects a running
// server's metered usage (package meter) onto a monthly bill.
//
// Every price comes from one sheet, prices.json, embedded in the binary
// with its sources and the date it was checked, and replaceable figure by
// figure with a JSON or YAML file (LoadPrices). No price appears anywhere
// else. The size rules (write units per 1 KB, read units per 4 KB) are
// package meter's; docs/cost.md writes the model out with three worked
// examples.
package cost
