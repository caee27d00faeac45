// Package attempt tracks the objects one attempt of a table operation
// writes ("temp, publish, clean"): every writer of data or deletion-vector
// files records a key before it creates the object, the commit marks the
// keys its committed version references (or may reference, after an
// ambiguous put) as kept, and the operation that started the attempt
// deletes the rest on every exit path with one deferred Clean.
//
// It owns only that bookkeeping. It must not decide what to commit, and it
// must not delete anything by itself: only Clean deletes, and only keys it
// was given and never told to keep.
package attempt
