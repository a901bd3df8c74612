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

# The budget's bookkeeping (valkey_budget.py, eviction.py): KEYS are always the use ranks (a
# sorted set: name -> rank), the stored sizes (a hash: name -> bytes) and their total (a
# counter).

# A use of each name in ARGV[3..] at time ARGV[1]; ARGV[2] is the half-life in seconds, 0 for
# plain LRU. The same formula as eviction.next_use_rank (tests compare the two).
USE_ENTRIES = """
local now, half_life = tonumber(ARGV[1]), tonumber(ARGV[2])
for i = 3, #ARGV do
  local previous = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if previous then
    local rank = now
    if half_life > 0 then
      local a = (tonumber(previous) - now) / half_life
      local added
      if a > 0 then added = a + math.log(1 + 2 ^ (-a)) / math.log(2)
      else added = math.log(1 + 2 ^ a) / math.log(2) end
      rank = now + half_life * added
    end
    redis.call('ZADD', KEYS[1], string.format('%.17g', rank), ARGV[i])
  end
end
return 0
"""
# Delete the entry KEYS[4] (name ARGV[1]) and its bookkeeping; returns 1 if it existed.
FORGET_ENTRY = """
local size = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') or 0
if redis.call('HDEL', KEYS[2], ARGV[1]) == 1 then redis.call('DECRBY', KEYS[3], size) end
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('DEL', KEYS[4])
"""
# The start of the scripts that evict: reads the budget's total into `used` and defines
# - leased_set: this process's leased names (64 characters each, concatenated) as a set;
# - forget: deletes `prefix .. name` and its rank and size, returning the size it counted,
#   whether it was counted and whether the entry existed (the caller settles the total);
# - make_room: evicts lowest rank first until `used` is at most `limit`, skipping `leased`,
#   and stores and returns the new total, with the bytes freed and the names evicted.
_MAKE_ROOM_PRELUDE = """
local function leased_set(leased_names)
  local leased = {}
  for i = 1, #leased_names, 64 do leased[string.sub(leased_names, i, i + 63)] = true end
  return leased
end
local function forget(name, prefix)
  local size = tonumber(redis.call('HGET', KEYS[2], name) or '0') or 0
  redis.call('ZREM', KEYS[1], name)
  local counted = redis.call('HDEL', KEYS[2], name) == 1
  return size, counted, redis.call('DEL', prefix .. name) == 1
end
local function make_room(used, limit, prefix, leased)
  local evicted, freed, skip = {}, 0, 0
  while used > limit do
    local batch = redis.call('ZRANGE', KEYS[1], skip, skip + 63)
    if #batch == 0 then break end
    for _, name in ipairs(batch) do
      if used <= limit then break end
      if leased[name] then skip = skip + 1
      else
        local size, _, existed = forget(name, prefix)
        used = used - size
        if existed then
          evicted[#evicted + 1] = name
          freed = freed + size
        end
      end
    end
  end
  if used < 0 then used = 0 end
  redis.call('SET', KEYS[3], used)
  return used, freed, evicted
end
local used = tonumber(redis.call('GET', KEYS[3]) or '0') or 0
"""
# Evict until the total is at most ARGV[1] (with ARGV[2] == '1': until ARGV[1] bytes are
# freed); ARGV[3] the entry key prefix, ARGV[4] the leased names. Returns {total, bytes freed,
# names evicted}.
MAKE_ROOM = _MAKE_ROOM_PRELUDE + """
local limit = tonumber(ARGV[1])
if ARGV[2] == '1' then limit = used - limit end
local total, freed, evicted = make_room(used, limit, ARGV[3], leased_set(ARGV[4]))
return {total, freed, evicted}
"""
# Admit one entry under its owners' shares and the budget, and write it, in one step: no other
# publisher's entry can land between the room made and the entry written (two steps let each
# of N concurrent publishers exceed the budget, or a share, by about an entry).
# KEYS[4] is the entry's key, KEYS[5..] the sorted sets of the entries each share holds
# (members `<name>:<num tokens>`). ARGV: [1] its name, [2] rank, [3] size (what it counts),
# [4] the budget, [5] the entry key prefix, [6] the leased names, [7] the value, [8] its TTL in
# ms (0: none), [9] bytes per token, [10] its member in the shares' sets, [11] its creation
# time, then for each share its kind and its limit in bytes. A share makes room by evicting
# its own unleased entries, lowest use rank first. Returns {'' (written) | 'duplicate' |
# 'budget' | 'share:<kind>', names evicted for the budget, {name, kind, ...} evicted for a
# share}.
ADMIT_ENTRY = _MAKE_ROOM_PRELUDE + """
if redis.call('EXISTS', KEYS[4]) == 1 then return {'duplicate', {}, {}} end
local size, budget, prefix = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local per_token, member = tonumber(ARGV[9]), ARGV[10]
local leased = leased_set(ARGV[6])
local by_share, pattern = {}, '^(' .. string.rep('%x', 64) .. '):(%d+)$'
for s = 5, #KEYS do
  local owned = KEYS[s]
  local kind, limit = ARGV[10 + 2 * (s - 4)], tonumber(ARGV[11 + 2 * (s - 4)])
  local type_of = redis.call('TYPE', owned)['ok']
  if type_of ~= 'zset' and type_of ~= 'none' then redis.call('DEL', owned) end
  local members = redis.call('ZRANGE', owned, 0, -1)
  local bound = 0  -- every member counted, live or not: if even that fits, nothing to check
  for _, m in ipairs(members) do
    local _, tokens = string.match(m, pattern)
    bound = bound + (tonumber(tokens) or 0) * per_token
  end
  local held, usage = {}, 0
  for _, m in ipairs(bound + size > limit and members or {}) do
    local name, tokens = string.match(m, pattern)
    if name and redis.call('EXISTS', prefix .. name) == 1 then
      local rank = tonumber(redis.call('ZSCORE', KEYS[1], name) or '0') or 0
      held[#held + 1] = {m, name, tonumber(tokens) * per_token, rank}
      usage = usage + tonumber(tokens) * per_token
    else redis.call('ZREM', owned, m) end
  end
  table.sort(held, function(a, b) return a[4] < b[4] end)
  for _, entry in ipairs(held) do
    if usage + size <= limit then break end
    if not leased[entry[2]] then
      local counted_size, counted, existed = forget(entry[2], prefix)
      if counted then used = used - counted_size end
      if existed then
        by_share[#by_share + 1] = entry[2]
        by_share[#by_share + 1] = kind
      end
      redis.call('ZREM', owned, entry[1])
      usage = usage - entry[3]
    end
  end
  if usage + size > limit then
    redis.call('SET', KEYS[3], math.max(used, 0))  -- what this share freed stays freed
    return {'share:' .. kind, {}, by_share}
  end
end
local total, _, evicted = make_room(used, budget - size, prefix, leased)
if total + size > budget then return {'budget', evicted, by_share} end
if ARGV[8] == '0' then redis.call('SET', KEYS[4], ARGV[7])
else redis.call('SET', KEYS[4], ARGV[7], 'PX', ARGV[8]) end
if redis.call('HSETNX', KEYS[2], ARGV[1], size) == 1 then redis.call('INCRBY', KEYS[3], size) end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
for s = 5, #KEYS do redis.call('ZADD', KEYS[s], ARGV[11], member) end
return {'', evicted, by_share}
"""
# The publication threshold's sender marks for every window of a prompt, in one round trip:
# ARGV[1] the concatenated 8-byte window ids, ARGV[2] the 16-byte marks (one per window),
# ARGV[3] the key prefix, ARGV[4] now, ARGV[5] the TTL (seconds), ARGV[6] the most marks a
# window keeps, ARGV[7] how many it answers. Each window is a sorted set of marks scored by
# when they were last renewed; a key of another type is replaced. Returns, for each window in
# order, exactly ARGV[7] strings of 16 bytes: its oldest marks, then zero blocks (the reply's
# size and the reader's work do not depend on how many tenants sent the window).
ADD_SENDERS = """
local ids, marks, prefix = ARGV[1], ARGV[2], ARGV[3]
local now, ttl, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local read, pad = tonumber(ARGV[7]), string.rep('\\0', 16)
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
  local found = redis.call('ZRANGE', key, 0, read - 1)
  for j = #found + 1, read do found[j] = pad end
  out[#out + 1] = found
end
return out
"""
