-- scripts/bench feed: GET /v1/devices/{token}/retractions for a random device
-- of the file FEED_DEVICES (a line each: token, the cursor its feed ended at,
-- the ETag that answer carried or "-"), with the client key in
-- RETRACT_BENCH_KEY. FEED_MODE says which call:
--   full   the whole feed (limit=100), as an app with no cursor yet reads it;
--   since  ?since=<the device's cursor>: nothing new, asked without a validator;
--   etag   the same with If-None-Match: <its ETag>, as RetractKit asks;
--   phone  etag nine times in ten, full the tenth.
local mode = os.getenv("FEED_MODE") or "full"
local key = "Bearer " .. (os.getenv("RETRACT_BENCH_KEY") or "")

local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("thread_number", threads)
end

-- Every request is made once, in init: the load generator shares the
-- machine's cores with the server, and a request built per call in Lua
-- costs it more than GET /healthz's.
local requests = { full = {}, etag = {} }

local function made(device, call)
    local path = "/v1/devices/" .. device.token .. "/retractions?limit=100"
    local headers = { ["Authorization"] = key }
    if call ~= "full" then path = path .. "&since=" .. device.cursor end
    if call == "etag" and device.etag ~= "-" then headers["If-None-Match"] = device.etag end
    return wrk.format("GET", path, headers)
end

function init(args)
    math.randomseed(os.time() * 100 + (thread_number or 0))
    for line in io.lines(os.getenv("FEED_DEVICES")) do
        local token, cursor, etag = line:match("^(%S+)%s+(%S+)%s+(%S+)$")
        local device = { token = token, cursor = cursor, etag = etag }
        if mode == "phone" then
            requests.full[#requests.full + 1] = made(device, "full")
            requests.etag[#requests.etag + 1] = made(device, "etag")
        else
            requests.full[#requests.full + 1] = made(device, mode)
        end
    end
end

request = function()
    local pool = requests.full
    if mode == "phone" and math.random(1, 10) ~= 1 then pool = requests.etag end
    return pool[math.random(1, #pool)]
end
