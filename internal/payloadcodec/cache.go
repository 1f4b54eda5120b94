package payloadcodec

import (
	"container/list"
	"crypto/cipher"
	"sync"
	"time"
)

// keyCache keeps the ciphers of the most recently used key ids and scopes,
// each for a while.
type keyCache struct {
	mu    sync.Mutex
	size  int
	ttl   time.Duration
	now   func() time.Time
	order *list.List // of *cached, most recently used first
	byKey map[cacheKey]*list.Element
}

type cacheKey struct{ id, scope string }

type cached struct {
	key     cacheKey
	aead    cipher.AEAD
	expires time.Time
}

func newKeyCache(size int, ttl time.Duration) *keyCache {
	return &keyCache{size: size, ttl: ttl, now: time.Now, order: list.New(), byKey: map[cacheKey]*list.Element{}}
}

func (c *keyCache) get(id, scope string) (cipher.AEAD, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[cacheKey{id, scope}]
	if !ok {
		return nil, false
	}
	if e := el.Value.(*cached); c.now().Before(e.expires) {
		c.order.MoveToFront(el)
		return e.aead, true
	}
	c.remove(el)
	return nil, false
}

func (c *keyCache) put(id, scope string, a cipher.AEAD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{id, scope}
	if el, ok := c.byKey[k]; ok {
		c.remove(el)
	}
	c.byKey[k] = c.order.PushFront(&cached{key: k, aead: a, expires: c.now().Add(c.ttl)})
	for c.order.Len() > c.size {
		c.remove(c.order.Back())
	}
}

// forget drops a scope's ciphers, of every key id.
func (c *keyCache) forget(scope string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.byKey {
		if k.scope == scope {
			c.remove(el)
		}
	}
}

func (c *keyCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *keyCache) remove(el *list.Element) {
	delete(c.byKey, el.Value.(*cached).key)
	c.order.Remove(el)
}
