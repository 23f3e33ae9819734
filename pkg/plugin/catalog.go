package plugin

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Factory makes a built-in job type.
type Factory func() JobType

// Catalog holds the built-in job types by kind. atom registers the ones
// in plugins/ at start-up; the same factories serve out-of-process
// (`atom plugin serve KIND`) and in-process (tests).
type Catalog struct {
	mu    sync.RWMutex
	kinds map[string]Factory
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog { return &Catalog{kinds: map[string]Factory{}} }

// Register adds kind; registering a kind twice is a programming error.
func (c *Catalog) Register(kind string, f Factory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.kinds[kind]; dup {
		panic(fmt.Sprintf("plugin: job type %q registered twice", kind))
	}
	c.kinds[kind] = f
}

// Lookup returns kind's factory.
func (c *Catalog) Lookup(kind string) (Factory, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f, ok := c.kinds[kind]
	return f, ok
}

// Kinds lists the registered kinds, sorted.
func (c *Catalog) Kinds() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Sorted(maps.Keys(c.kinds))
}
