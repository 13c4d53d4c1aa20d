-- scripts/bench api: POST /v1/retractions, each request retracting one random
-- reference of ref-0 … ref-19999 of app "bench". The key is in RETRACT_BENCH_KEY.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("RETRACT_BENCH_KEY") or "")
wrk.headers["Content-Type"] = "application/json"

local references = 20000

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
    local body = '{"app":"bench","references":["ref-' .. math.random(0, references - 1) .. '"]}'
    return wrk.format(nil, nil, nil, body)
end
