// Package cache is the dataset cache's file tree in one Redis server: the
// layout, and a client that reads, writes, checks and copies it. atom
// mounts the tree with FUSE (atom/internal/cachefs) and loads it (atom
// cache put); the coordinator asks a cluster's Redis whether it holds a
// job's datasets (Complete) and warms another cluster's from it (Copy).
//
// # Key layout (version 1)
//
// Every key starts with a prefix, "atom:" by default. Files and
// directories are inodes, numbered from 1 (the root), so a rename moves one
// directory entry whatever the size of what it names.
//
//	atom:layout        string  "1": the layout version; another is refused
//	atom:next          string  the last inode number handed out (INCR)
//	atom:i:<ino>       hash    an inode's attributes:
//	                             type   "file" or "dir"
//	                             mode   permission bits, octal ("644")
//	                             size   bytes (files)
//	                             chunk  chunk size in bytes (files; 1048576 by default)
//	                             mtime, ctime  Unix nanoseconds
//	                           and on a directory loaded whole as a dataset,
//	                           the completeness marker:
//	                             complete  Unix nanoseconds of the load
//	                             files, bytes  what it held then
//	atom:d:<ino>       hash    a directory's listing: name -> child inode
//	atom:c:<ino>:<n>   string  chunk n of a file: bytes [n*chunk, (n+1)*chunk);
//	                           a missing or short chunk reads as zeros
//	atom:lease:<path>  string  a dataset's write lease while Put or Copy
//	                           writes it: "<token> <unix ns>", LeaseTTL
//	                           expiry, renewed while it runs (see Acquire)
//
// A dataset is a directory, named by its path from the root
// ("lidar/2024-05" is /lidar/2024-05). It is complete when its inode has
// the marker. Put (atom cache put) and Copy set the marker after the last
// byte is in; every change under the directory (create, write, truncate,
// rename, remove, through a mount or this package) clears it on that
// directory and on every directory above, in the same atomic step. So
// "this Redis holds dataset D completely" is one script call (Complete).
// Put and Copy write a dataset under its lease, one writer at a time (a
// second gets a *BusyError), and MarkComplete sets the marker only if
// the dataset holds exactly the files and bytes written.
//
// Reading a file with a plain Redis client (what a job given REDIS_HOST
// and REDIS_PORT does, without the mount): follow the path from inode 1
// with HGET atom:d:<ino> <name>, read size and chunk with HMGET
// atom:i:<ino> size chunk, then GET atom:c:<ino>:0, :1, ... and cut the
// result at size (pad missing or short chunks with zeros).
//
// # Consistency
//
// Metadata changes (create, mkdir, unlink, rmdir, rename, truncate, mark)
// are Lua scripts, atomic on the server: of two clients creating the same
// name exclusively exactly one succeeds, a rename is seen whole or not at
// all, rmdir of a non-empty directory fails. Data writes (WriteAt) are one
// atomic SETRANGE-and-grow per chunk touched: concurrent writers of
// disjoint ranges of a file both land; for overlapping ranges the last
// write of each byte wins. Bulk loads (WriteFrom) set the size after the
// data, so readers never count bytes that are not there yet.
//
// Redis Cluster is not supported (scripts touch keys of many slots): use
// one standalone server per cluster.
//
// # Errors
//
// Errors from the layout are *fs.PathError wrapping syscall.Errno
// (ENOENT, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY, EINVAL, EBUSY), so
// errors.Is(err, fs.ErrNotExist) works. Network trouble is retried with
// backoff within Options.Timeout; past it the error wraps ErrUnavailable.
// No call waits longer than that bound.
package cache
