package actions

import "testing"

func TestSamePartitionValues(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name string
		a, b map[string]*string
		want bool
	}{
		{"both empty", nil, map[string]*string{}, true},
		{"equal values", map[string]*string{"p": s("1"), "q": nil}, map[string]*string{"p": s("1"), "q": nil}, true},
		{"different value", map[string]*string{"p": s("1")}, map[string]*string{"p": s("2")}, false},
		{"null is not empty", map[string]*string{"p": nil}, map[string]*string{"p": s("")}, false},
		{"absent is not null", map[string]*string{"p": nil}, map[string]*string{"q": nil}, false},
		{"extra key", map[string]*string{"p": s("1")}, map[string]*string{"p": s("1"), "q": s("1")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SamePartitionValues(tc.a, tc.b); got != tc.want {
				t.Errorf("SamePartitionValues(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := SamePartitionValues(tc.b, tc.a); got != tc.want {
				t.Errorf("SamePartitionValues(%v, %v) = %v, want %v", tc.b, tc.a, got, tc.want)
			}
		})
	}
}
