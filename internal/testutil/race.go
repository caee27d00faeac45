package testutil

import "sync"

// AtOnce starts n goroutines at once, goroutine i calling fn(i), and
// waits for them all.
func AtOnce(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// Race starts n goroutines at once, goroutine i calling fn(i), and waits
// for them all. It returns, in the order they finished, the goroutines for
// which fn returned nil and the errors that lost does not accept (a race's
// expected outcome for the losers, such as "already exists").
func Race(n int, fn func(i int) error, lost func(error) bool) (winners []int, errs []error) {
	var mu sync.Mutex
	AtOnce(n, func(i int) {
		err := fn(i)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			winners = append(winners, i)
		case !lost(err):
			errs = append(errs, err)
		}
	})
	return winners, errs
}
