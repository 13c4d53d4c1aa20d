-- scripts/bench api: POST /v1/deliveries, each request recording one batch of
-- 100 random 32-byte device tokens for one of the pre-recorded references
-- ref-0 … ref-19999 of app "bench". The key is in RETRACT_BENCH_KEY.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("RETRACT_BENCH_KEY") or "")
wrk.headers["Content-Type"] = "application/json"

local references = 20000
local batch = 100

-- Each thread its own random sequence.
local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("thread_number", threads)
end

function init(args)
    math.randomseed(os.time() * 100 + (thread_number or 0))
end

local function r()
    return math.random(0, 2147483647)
end

local function token()
    return string.format('"%08x%08x%08x%08x%08x%08x%08x%08x"', r(), r(), r(), r(), r(), r(), r(), r())
end

request = function()
    local tokens = {}
    for i = 1, batch do
        tokens[i] = token()
    end
    local body = '{"app":"bench","reference":"ref-' .. math.random(0, references - 1)
        .. '","tokens":[' .. table.concat(tokens, ",") .. "]}"
    return wrk.format(nil, nil, nil, body)
end
