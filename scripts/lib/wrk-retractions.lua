-- scripts/bench api: POST /v1/retractions, each request retracting one random
-- reference of ref-0 … ref-19999 of app "bench" (ref-1 … ref-R with
-- RETRACT_BENCH_REFERENCES=R, as scripts/bench feed has them). The key is in
-- RETRACT_BENCH_KEY.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("RETRACT_BENCH_KEY") or "")
wrk.headers["Content-Type"] = "application/json"

local references = tonumber(os.getenv("RETRACT_BENCH_REFERENCES") or "")
local first = references and 1 or 0
references = references or 20000

-- Each thread its own random sequence.
local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("thread_number", threads)
end

function init(args)
    math.randomseed(os.time() * 100 + (thread_number or 0))
end

request = function()
    local body = '{"app":"bench","references":["ref-' .. math.random(first, first + references - 1) .. '"]}'
    return wrk.format(nil, nil, nil, body)
end
