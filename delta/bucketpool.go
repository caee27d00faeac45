package delta

import (
	"fmt"
	"sync"

	"gocloud.dev/blob"
)

// BucketPool shares one store client per bucket among the object-store
// tables opened with it (OpenOptions.Buckets): a daemon watching a
// thousand tables of one bucket keeps one SDK client and one connection
// pool, where a client per table costs a few hundred KiB each before its
// first request. Tables of one bucket URL (scheme, bucket and query: the
// endpoint, region and the other store parameters) share; a table's own
// deadlines, retries and prefix are still its own. The client is closed
// when the last table using it closes. A BucketPool is safe for
// concurrent use; its zero value is not usable (NewBucketPool).
type BucketPool struct {
	mu   sync.Mutex
	open map[string]*pooledBucket
}

type pooledBucket struct {
	b    *blob.Bucket
	refs int
}

// NewBucketPool returns an empty pool.
func NewBucketPool() *BucketPool {
	return &BucketPool{open: map[string]*pooledBucket{}}
}

// acquire returns the shared bucket of key, opening it with open when no
// table holds it, and the release that the table's Close calls once.
func (p *BucketPool) acquire(key string, open func() (*blob.Bucket, error)) (*blob.Bucket, func() error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pb, ok := p.open[key]
	if !ok {
		b, err := open()
		if err != nil {
			return nil, nil, err
		}
		pb = &pooledBucket{b: b}
		p.open[key] = pb
	}
	pb.refs++
	var once sync.Once
	release := func() error {
		var err error
		once.Do(func() { err = p.release(key, pb) })
		return err
	}
	return pb.b, release, nil
}

func (p *BucketPool) release(key string, pb *pooledBucket) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pb.refs--
	if pb.refs > 0 {
		return nil
	}
	delete(p.open, key)
	if err := pb.b.Close(); err != nil {
		return fmt.Errorf("close shared bucket: %w", err)
	}
	return nil
}

// Len returns how many shared clients the pool holds open.
func (p *BucketPool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.open)
}
