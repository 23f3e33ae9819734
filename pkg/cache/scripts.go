package cache

import "github.com/redis/go-redis/v9"

// The metadata operations are Lua scripts so that each one is atomic on
// the server (two machines racing to create, rename or remove see one
// order) and costs one round trip whatever the path's depth. Every script
// gets the key prefix as ARGV[1]; errors come back as errno names
// (ENOENT, EEXIST, ...), which errnoOf maps to syscall.Errno.
const prelude = `
local P = ARGV[1]
local function ikey(i) return P .. 'i:' .. i end
local function dkey(i) return P .. 'd:' .. i end
local function ckey(i, n) return P .. 'c:' .. i .. ':' .. n end
local function num(x) return string.format('%.0f', x) end
local function fail(e) return redis.error_reply(e) end
-- clear drops a directory's completeness marker: its content changes.
local function clear(i) redis.call('HDEL', ikey(i), 'complete', 'files', 'bytes') end
local function root(now)
  if redis.call('EXISTS', ikey(1)) == 0 then
    redis.call('HSET', ikey(1), 'type', 'dir', 'mode', '755', 'mtime', now, 'ctime', now)
    redis.call('SETNX', P .. 'next', 1)
  end
end
-- lookup walks p[1..n] from the root; with dirty it clears the marker of
-- every directory it passes, the last one included.
local function lookup(p, n, dirty)
  local ino = '1'
  for i = 1, n do
    if dirty then clear(ino) end
    local c = redis.call('HGET', dkey(ino), p[i])
    if not c then
      if redis.call('HGET', ikey(ino), 'type') ~= 'dir' then return nil, 'ENOTDIR' end
      return nil, 'ENOENT'
    end
    ino = c
  end
  if dirty then clear(ino) end
  return ino
end
local function parts(from, to)
  local p = {}
  for i = from, to or #ARGV do p[#p + 1] = ARGV[i] end
  return p
end
-- free deletes an inode: its attributes, and its chunks or its listing.
local function free(ino)
  local a = redis.call('HMGET', ikey(ino), 'type', 'size', 'chunk')
  if a[1] == 'file' then
    local n = math.ceil(tonumber(a[2]) / tonumber(a[3]))
    for k = 0, n - 1 do redis.call('UNLINK', ckey(ino, k)) end
  else
    redis.call('UNLINK', dkey(ino))
  end
  redis.call('UNLINK', ikey(ino))
end
local function touch(ino, now) redis.call('HSET', ikey(ino), 'mtime', now, 'ctime', now) end
local function isdir(ino) return redis.call('HGET', ikey(ino), 'type') == 'dir' end
`

func script(body string) *redis.Script { return redis.NewScript(prelude + body) }

// ARGV: P, now, dirty, parts... → {ino, HGETALL i:ino}
var statScript = script(`
root(ARGV[2])
local p = parts(4)
local ino, err = lookup(p, #p, ARGV[3] == '1')
if not ino then return fail(err) end
local a = redis.call('HGETALL', ikey(ino))
if #a == 0 then return fail('ENOENT') end
return {ino, a}
`)

// ARGV: P, now, type, mode, chunk, excl, parts... → {ino, attrs, created}
var createScript = script(`
local now = ARGV[2]
root(now)
local p = parts(7)
local n = #p
if n == 0 then return fail('EEXIST') end
local dir, err = lookup(p, n - 1, true)
if not dir then return fail(err) end
if not isdir(dir) then return fail('ENOTDIR') end
local ex = redis.call('HGET', dkey(dir), p[n])
if ex then
  if ARGV[6] == '1' then return fail('EEXIST') end
  if isdir(ex) then return fail('EISDIR') end
  return {ex, redis.call('HGETALL', ikey(ex)), 0}
end
local ino = redis.call('INCR', P .. 'next')
if ARGV[3] == 'dir' then
  redis.call('HSET', ikey(ino), 'type', 'dir', 'mode', ARGV[4], 'mtime', now, 'ctime', now)
else
  redis.call('HSET', ikey(ino), 'type', 'file', 'mode', ARGV[4], 'size', 0, 'chunk', ARGV[5], 'mtime', now, 'ctime', now)
end
redis.call('HSET', dkey(dir), p[n], ino)
touch(dir, now)
return {ino, redis.call('HGETALL', ikey(ino)), 1}
`)

// ARGV: P, now, rmdir, parts... → ino
var removeScript = script(`
root(ARGV[2])
local p = parts(4)
local n = #p
if n == 0 then return fail('EBUSY') end
local dir, err = lookup(p, n - 1, true)
if not dir then return fail(err) end
local ino = redis.call('HGET', dkey(dir), p[n])
if not ino then
  if not isdir(dir) then return fail('ENOTDIR') end
  return fail('ENOENT')
end
if ARGV[3] == '1' then
  if not isdir(ino) then return fail('ENOTDIR') end
  if redis.call('HLEN', dkey(ino)) > 0 then return fail('ENOTEMPTY') end
elseif isdir(ino) then
  return fail('EISDIR')
end
redis.call('HDEL', dkey(dir), p[n])
free(ino)
touch(dir, ARGV[2])
return ino
`)

// ARGV: P, now, nsrc, src parts..., dst parts... → 0
var renameScript = script(`
local now = ARGV[2]
root(now)
local ns = tonumber(ARGV[3])
local s, d = parts(4, 3 + ns), parts(4 + ns)
if #s == 0 or #d == 0 then return fail('EBUSY') end
if #d > #s then
  local inside = true
  for i = 1, #s do if s[i] ~= d[i] then inside = false break end end
  if inside then return fail('EINVAL') end
end
local sd, err = lookup(s, #s - 1, true)
if not sd then return fail(err) end
local sino = redis.call('HGET', dkey(sd), s[#s])
if not sino then return fail('ENOENT') end
local dd, err2 = lookup(d, #d - 1, true)
if not dd then return fail(err2) end
if not isdir(dd) then return fail('ENOTDIR') end
local dino = redis.call('HGET', dkey(dd), d[#d])
if dino == sino then return 0 end
if dino then
  local sdir, ddir = isdir(sino), isdir(dino)
  if sdir and not ddir then return fail('ENOTDIR') end
  if ddir and not sdir then return fail('EISDIR') end
  if ddir and redis.call('HLEN', dkey(dino)) > 0 then return fail('ENOTEMPTY') end
  free(dino)
end
redis.call('HDEL', dkey(sd), s[#s])
redis.call('HSET', dkey(dd), d[#d], sino)
touch(sd, now)
touch(dd, now)
redis.call('HSET', ikey(sino), 'ctime', now)
return 0
`)

// ARGV: P, now, size, parts... → 0. Chunks past the new end are deleted
// and the last one cut, so growing the file again reads zeros.
var truncateScript = script(`
local now = ARGV[2]
root(now)
local p = parts(4)
local ino, err = lookup(p, #p, true)
if not ino then return fail(err) end
local a = redis.call('HMGET', ikey(ino), 'type', 'size', 'chunk')
if a[1] ~= 'file' then return fail('EISDIR') end
local old, new, cs = tonumber(a[2]), tonumber(ARGV[3]), tonumber(a[3])
if new < old then
  local last, keep = math.floor(new / cs), new % cs
  local from = last
  if keep > 0 then
    local k = ckey(ino, last)
    local v = redis.call('GETRANGE', k, 0, keep - 1)
    if #v > 0 then redis.call('SET', k, v) end
    from = last + 1
  end
  for i = from, math.ceil(old / cs) - 1 do redis.call('UNLINK', ckey(ino, i)) end
end
redis.call('HSET', ikey(ino), 'size', ARGV[3], 'mtime', now, 'ctime', now)
return 0
`)

// ARGV: P, now, ino, end, chunk index → new size. Runs right after a
// write of chunk n, in the same pipeline: the size grows to cover end.
// If the inode is gone (removed meanwhile), the chunk just written is
// deleted, so a writer racing a remove never leaves an orphan chunk.
var growScript = script(`
local ino = ARGV[3]
local a = redis.call('HMGET', ikey(ino), 'type', 'size')
if a[1] ~= 'file' then
  if tonumber(ARGV[5]) >= 0 then redis.call('UNLINK', ckey(ino, ARGV[5])) end
  return fail('ENOENT')
end
local size = tonumber(a[2])
if tonumber(ARGV[4]) > size then
  size = tonumber(ARGV[4])
  redis.call('HSET', ikey(ino), 'size', ARGV[4])
end
redis.call('HSET', ikey(ino), 'mtime', ARGV[2])
return num(size)
`)

// ARGV: P, now, field, value, parts... → 0 (mode or mtime).
var setattrScript = script(`
root(ARGV[2])
local p = parts(5)
local ino, err = lookup(p, #p, false)
if not ino then return fail(err) end
redis.call('HSET', ikey(ino), ARGV[3], ARGV[4], 'ctime', ARGV[2])
return 0
`)

// ARGV: P, now, files, bytes, parts... → 0: the dataset's marker.
var markScript = script(`
root(ARGV[2])
local p = parts(5)
local ino, err = lookup(p, #p, false)
if not ino then return fail(err) end
if not isdir(ino) then return fail('ENOTDIR') end
redis.call('HSET', ikey(ino), 'complete', ARGV[2], 'files', ARGV[3], 'bytes', ARGV[4])
return 0
`)
