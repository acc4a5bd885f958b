package log

import (
	"container/list"
	"errors"
	"io/fs"
	"sync"

	"weir/broker/log/vfs"
)

// FileCache is a bounded, shared LRU of open segment files (and the lazily
// loaded indexes of sealed segments). Entries are refcounted: eviction and
// segment deletion never close a file that a reader (a Section) still uses;
// it is closed when the last reference is released. Safe for concurrent use.
type FileCache struct {
	mu      sync.Mutex
	max     int
	lru     list.List // *handle, most recent at front
	entries map[*segment]*handle
	opens   int64
}

// NewFileCache returns a cache keeping at most max files open while unused
// (max <= 0 means 128).
func NewFileCache(max int) *FileCache {
	if max <= 0 {
		max = 128
	}
	return &FileCache{max: max, entries: map[*segment]*handle{}}
}

// handle is a cached open segment file.
type handle struct {
	c       *FileCache
	seg     *segment
	f       vfs.File
	refs    int
	elem    *list.Element
	dropped bool

	// Lazily loaded indexes of a sealed segment (guarded by idxMu).
	idxMu     sync.Mutex
	idxLoaded bool
	idx, tidx []byte
	releases  []func() error
}

// Len returns the number of open files in the cache.
func (c *FileCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// acquire returns the open file of seg with a reference taken.
func (c *FileCache) acquire(seg *segment, writable bool) (*handle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.entries[seg]; ok {
		h.refs++
		c.lru.MoveToFront(h.elem)
		return h, nil
	}
	var f vfs.File
	var err error
	if writable {
		f, err = seg.fs.OpenReadWrite(seg.path(logSuffix))
	} else {
		f, err = seg.fs.Open(seg.path(logSuffix))
	}
	if err != nil {
		return nil, err
	}
	c.opens++
	h := &handle{c: c, seg: seg, f: f, refs: 1}
	h.elem = c.lru.PushFront(h)
	c.entries[seg] = h
	c.evictLocked()
	return h, nil
}

func (c *FileCache) evictLocked() {
	for e := c.lru.Back(); e != nil && len(c.entries) > c.max; {
		h := e.Value.(*handle)
		prev := e.Prev()
		if h.refs == 0 {
			c.removeLocked(h)
			h.closeLocked()
		}
		e = prev
	}
}

func (c *FileCache) removeLocked(h *handle) {
	if h.dropped {
		return
	}
	h.dropped = true
	c.lru.Remove(h.elem)
	delete(c.entries, h.seg)
}

// release drops a reference taken by acquire.
func (h *handle) release() {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	h.refs--
	if h.refs < 0 {
		panic("log: FileCache handle released twice")
	}
	if h.refs == 0 {
		if h.dropped {
			h.closeLocked()
		} else {
			c.evictLocked()
		}
	}
}

// closeLocked closes the file and unmaps indexes. refs must be 0.
func (h *handle) closeLocked() {
	if h.f != nil {
		h.f.Close()
		h.f = nil
	}
	h.idxMu.Lock()
	for _, r := range h.releases {
		r()
	}
	h.releases, h.idx, h.tidx, h.idxLoaded = nil, nil, nil, false
	h.idxMu.Unlock()
}

// drop forgets seg (deleted or replaced): its file is closed once unused.
func (c *FileCache) drop(seg *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.entries[seg]; ok {
		c.removeLocked(h)
		if h.refs == 0 {
			h.closeLocked()
		}
	}
}

// isNotExist reports a missing file.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
