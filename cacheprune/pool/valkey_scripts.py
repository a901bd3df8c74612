"""The Lua scripts of the Valkey backend: one round trip for a lookup's anchors, one call per
anchor rewritten. Neither calls back per record: an anchor costs O(its length) once."""

# One round trip for every window of a prompt: ARGV[1] is the concatenated 16-byte ids,
# ARGV[3] the most bytes read per anchor (its oldest records). Returns (index, length, tail)
# triples; length -1: a key of another type.
PROBE_ANCHORS = """
local ids, prefix, limit, out = ARGV[1], ARGV[2], tonumber(ARGV[3]), {}
for i = 0, #ids / 16 - 1 do
  local key = prefix .. string.sub(ids, i * 16 + 1, i * 16 + 16)
  local size = redis.pcall('STRLEN', key)
  if type(size) == 'table' then
    out[#out + 1] = i; out[#out + 1] = -1; out[#out + 1] = ''
  elseif size > 0 then
    out[#out + 1] = i; out[#out + 1] = size
    out[#out + 1] = redis.call('GETRANGE', key, 0, limit - 1)
  end
end
return out
"""
# One anchor rewritten once: drop every copy of the records in ARGV[1], keep the first
# ARGV[3] records; a value of another type or of a broken length is deleted.
REWRITE_ANCHOR = """
local ok, value = pcall(redis.call, 'GET', KEYS[1])
if not ok then redis.call('DEL', KEYS[1]) return 0 end
if not value then return 0 end
local size, drop, kept = tonumber(ARGV[2]), {}, {}
if #value % size ~= 0 then redis.call('DEL', KEYS[1]) return 0 end
for i = 1, #ARGV[1], size do drop[string.sub(ARGV[1], i, i + size - 1)] = true end
for i = 1, #value, size do
  local record = string.sub(value, i, i + size - 1)
  if not drop[record] then kept[#kept + 1] = record end
end
local last = math.min(#kept, tonumber(ARGV[3]))
if #kept == 0 then redis.call('DEL', KEYS[1])
else redis.call('SET', KEYS[1], table.concat(kept, '', 1, last)) end
return #kept
"""
# The publication threshold's sender marks for every window of a prompt, in one round trip:
# ARGV[1] the concatenated 8-byte window ids, ARGV[2] the 16-byte marks (one per window),
# ARGV[3] the key prefix, ARGV[4] now, ARGV[5] the TTL (seconds), ARGV[6] the most marks a
# window keeps. Each window is a sorted set of marks scored by when they were last renewed; a
# key of another type is replaced. Returns each window's marks, in order.
ADD_SENDERS = """
local ids, marks, prefix = ARGV[1], ARGV[2], ARGV[3]
local now, ttl, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local ttl_ms, out = math.ceil(ttl * 1000), {}
for i = 0, #ids / 8 - 1 do
  local key = prefix .. string.sub(ids, i * 8 + 1, i * 8 + 8)
  local mark = string.sub(marks, i * 16 + 1, i * 16 + 16)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'zset' and kind ~= 'none' then redis.call('DEL', key) end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. (now - ttl))
  if redis.call('ZSCORE', key, mark) or redis.call('ZCARD', key) < cap then
    redis.call('ZADD', key, now, mark)
  end
  redis.call('PEXPIRE', key, ttl_ms)
  out[#out + 1] = redis.call('ZRANGE', key, 0, -1)
end
return out
"""
