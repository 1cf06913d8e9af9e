-- wrk script for the gate benchmark. With a token file argument every request carries the next
-- token of the file (each thread starting at its own offset); without one, wrk's own request
-- (with its -H headers) is sent. With `dpop` after the file, each line is a DPoP proof sent as the
-- `DPoP` header beside the -H headers (the Authorization: DPoP token). Either way it ends by
-- printing one JSON line of totals.
--   wrk ... -s wrk.lua URL -- [token-file [dpop]]

local threads = {}
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_index", thread_count - 1)
  table.insert(threads, thread)
end

function init(args)
  if args[1] == nil then
    return
  end
  local tokens = {}
  for line in io.lines(args[1]) do
    if #line > 0 then
      tokens[#tokens + 1] = line
    end
  end
  -- Threads start far apart in the file, so they do not send the same token at the same time.
  local position = (thread_index * math.floor(#tokens / 16)) % #tokens
  if args[2] == "dpop" then
    -- A proof is good once: no offsets, no wrapping tricks; the pool is sized for the run.
    position = 0
    request = function()
      position = position % #tokens + 1
      local headers = {}
      for name, value in pairs(wrk.headers) do
        headers[name] = value
      end
      headers["DPoP"] = tokens[position]
      return wrk.format(nil, nil, headers)
    end
    return
  end
  request = function()
    position = position % #tokens + 1
    return wrk.format(nil, nil, { ["Authorization"] = "Bearer " .. tokens[position] })
  end
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    '\n{"requests":%d,"duration_us":%d,"socket_errors":%d,"status_errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests,
    summary.duration,
    errors.connect + errors.read + errors.write + errors.timeout,
    errors.status,
    latency:percentile(50),
    latency:percentile(99)
  ))
end
