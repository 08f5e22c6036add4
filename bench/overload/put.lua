-- put.lua: wrk script for puts.sh. Every request puts a new key of the
-- shared table named by $TABLE (default "load"), with the same small body
-- as puts.sh's vegeta targets. Each wrk thread numbers its keys apart.
local body = '{"timestamp":"' .. os.date("!%Y-%m-%dT%H:%M:%SZ") .. '","attributes":{"user":"u-123456","score":42}}'
local headers = { ["Content-Type"] = "application/json" }
local table = os.getenv("TABLE") or "load"
local threads = 0

function setup(thread)
	threads = threads + 1
	thread:set("id", threads)
end

local n = 0
function request()
	n = n + 1
	return wrk.format("PUT", string.format("/v1/tables/%s/items/k%d-%07d", table, id or 0, n), headers, body)
end
