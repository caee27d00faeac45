// Package dv owns the deletion-vector codec: the RoaringBitmapArray
// serializations Spark writes (EncodeBitmap, DecodeBitmap, portable and
// native layouts) and Z85 with the UUID-based DV file names (Z85Encode,
// Z85Decode, DVFileKey).
//
// Reading and writing DV files (ReadDV, WriteDV) still live in delta: they
// take a *delta.Table for its bucket, root and allowed prefixes. It must
// not read or write objects; it imports delta/pq (the panic guard),
// failure and internal/tablepath.
package dv
