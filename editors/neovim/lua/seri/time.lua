-- Times as the server sends them (UTC, ISO 8601: `2025-01-31T10:00:00.000000Z`), for
-- showing in the user's own time zone.

local M = {}

---Seconds since the epoch of a UTC ISO-8601 time, or nil when it is not one.
---@param iso string
---@return integer?
function M.epoch(iso)
  local y, mo, d, h, mi, s = tostring(iso):match("^(%d+)-(%d+)-(%d+)[T ](%d+):(%d+):(%d+)")
  if not y then
    return nil
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  -- Days from 1970-01-01 to the date (proleptic Gregorian calendar).
  if mo <= 2 then
    y = y - 1
  end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * (mo + (mo > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s)
end

---`2025-01-31 11:00`: the time in the local time zone, to the minute; what was given
---when it is not a time.
---@param iso string?
---@return string
function M.local_minute(iso)
  local at = M.epoch(iso or "")
  if not at then
    return tostring(iso or "")
  end
  return tostring(os.date("%Y-%m-%d %H:%M", at))
end

return M
