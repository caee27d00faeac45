package delta

import (
	"slices"
	"testing"
)

// Strings a textArena returns keep their bytes when the source buffer is
// reused and when later strings fill the block and start new ones.
func TestTextArenaStringsAreCopies(t *testing.T) {
	var a textArena
	src := make([]byte, arenaBlock)
	var got, want []string
	for i := 0; i < 3*arenaBlock/100; i++ {
		n := i % 200 // empty, short, and over arenaBlock/16 once in a while
		if i%97 == 0 {
			n = arenaBlock/16 + 1
		}
		for j := range src[:n] {
			src[j] = byte('a' + (i+j)%26)
		}
		want = append(want, string(src[:n]))
		got = append(got, a.string(src[:n]))
		clear(src[:n])
	}
	if !slices.Equal(got, want) {
		t.Fatal("arena strings changed after their source was reused")
	}
}
