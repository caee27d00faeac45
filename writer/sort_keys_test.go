package writer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/compactord/compactord/internal/curve"
)

// TestBucketRowsEqualsBucket holds the column-wise bucket search of the
// keys to the column's bucket of each value, one at a time: for every kind
// of clustering column (signed integers, plain floats, others searched by
// the type's order), with nulls (NullBucket) and without, from a row
// offset inside the buffer.
func TestBucketRowsEqualsBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	tests := []struct {
		name string
		typ  parquet.Type
		mk   func(i int) parquet.Value
	}{
		{"int64", parquet.Int64Type, func(i int) parquet.Value { return parquet.Int64Value(rng.Int64N(2000) - 1000) }},
		{"int32", parquet.Int32Type, func(i int) parquet.Value { return parquet.Int32Value(int32(rng.IntN(500)) - 250) }},
		{"double", parquet.DoubleType, func(i int) parquet.Value { return parquet.DoubleValue(rng.NormFloat64()) }},
		{"float", parquet.FloatType, func(i int) parquet.Value { return parquet.FloatValue(float32(rng.NormFloat64())) }},
		{"double of zeros and infinities", parquet.DoubleType, func(i int) parquet.Value {
			return parquet.DoubleValue([]float64{math.Copysign(0, -1), 0, math.Inf(-1), math.Inf(1), rng.NormFloat64(), -rng.ExpFloat64() * 1e300}[rng.IntN(6)])
		}},
		{"wide int64", parquet.Int64Type, func(i int) parquet.Value { return parquet.Int64Value(int64(rng.Uint64())) }},
		{"string", parquet.String().Type(), func(i int) parquet.Value { return parquet.ByteArrayValue(fmt.Appendf(nil, "s%03d", rng.IntN(300))) }},
	}
	const rows = 5000
	for _, tt := range tests {
		for _, maxDef := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s, max definition level %d", tt.name, maxDef), func(t *testing.T) {
				kind := tt.typ.Kind()
				c := &sortColumn{cmp: tt.typ.Compare, kind: kind, signed: true,
					plainFloat: kind == parquet.Float || kind == parquet.Double,
					sample:     curve.NewReservoir[parquet.Value](rows, 1)}
				b := newColBuf(0, kind, maxDef, rows)
				vals := make([]parquet.Value, rows)
				for i := range vals {
					v := tt.mk(i)
					if maxDef > 0 && i%5 == 2 {
						v = parquet.Value{}.Level(0, 0, 0)
					} else {
						c.sample.Add(v)
						v = v.Level(0, maxDef, 0)
					}
					vals[i] = v
				}
				if err := b.append(vals); err != nil {
					t.Fatal(err)
				}
				c.setBuckets(64)
				const lo = 37
				got := make([]uint32, rows-lo-10)
				for j := range got {
					got[j] = 12345 // what an earlier batch left
				}
				bucketRows(got, b, c, lo)
				for j, g := range got {
					want := curve.NullBucket
					if v := vals[lo+j]; !v.IsNull() {
						want = c.bucket(v)
					}
					if g != want {
						t.Fatalf("row %d (%v): bucket %d, want %d", lo+j, vals[lo+j], g, want)
					}
				}
			})
		}
	}
}

// A NaN in a double clustering column whose sample held none takes the
// bucket the bucketizer gives it (above every bound), as minus zero takes
// zero's, through the column path's indexed search.
func TestFloatBucketOfNaNAndMinusZeroIsTheBucketizers(t *testing.T) {
	c := &sortColumn{cmp: parquet.DoubleType.Compare, kind: parquet.Double, signed: true, plainFloat: true,
		sample: curve.NewReservoir[parquet.Value](100, 1)}
	for i := range 100 {
		c.sample.Add(parquet.DoubleValue(float64(i%21 - 10)))
	}
	c.setBuckets(8)
	if c.floatBounds == nil {
		t.Fatal("no indexed float bounds for a sample without NaNs")
	}
	for _, f := range []float64{math.NaN(), math.Copysign(0, -1), 0, -10, 10, math.Inf(1), math.Inf(-1)} {
		if got, want := c.floatBucket(f), c.bucket(parquet.DoubleValue(f)); got != want {
			t.Errorf("floatBucket(%g) = %d, the bucketizer's %d", f, got, want)
		}
	}
}
