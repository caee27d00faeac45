package logpath

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/compactord/compactord/delta/actions"
)

// LastCheckpointKey is the checkpoint hint file.
const LastCheckpointKey = LogDir + "_last_checkpoint"

// LastCheckpoint is the content of _delta_log/_last_checkpoint that log
// replay uses: a hint, never trusted over the listing.
type LastCheckpoint struct {
	// Version is the checkpoint's version.
	Version  int64  `json:"version"`
	Parts    *int   `json:"parts,omitempty"`
	Checksum string `json:"checksum,omitempty"`
	V2       *struct {
		Path string `json:"path"`
	} `json:"v2Checkpoint,omitempty"`
}

// LastCheckpointOut is the _last_checkpoint document compactord writes:
// version and size first (old readers split-read them), no parts for a
// single-file checkpoint (Trino takes parts:1 for multi-part; parts is set
// only when RepairLastCheckpoint points at another writer's multi-part
// checkpoint), checksum last.
type LastCheckpointOut struct {
	Version       int64   `json:"version"`
	Size          int64   `json:"size"`
	Parts         *int    `json:"parts,omitempty"`
	SizeInBytes   int64   `json:"sizeInBytes"`
	NumOfAddFiles int64   `json:"numOfAddFiles"`
	V2Checkpoint  *LastV2 `json:"v2Checkpoint,omitempty"`
	Checksum      string  `json:"checksum,omitempty"`
}

// LastV2 is the v2Checkpoint entry of a LastCheckpointOut: the UUID-named
// file, and the non-file actions and sidecars inlined when few.
type LastV2 struct {
	Path             string             `json:"path"`
	SizeInBytes      int64              `json:"sizeInBytes"`
	ModificationTime int64              `json:"modificationTime"`
	NonFileActions   *[]actions.Action  `json:"nonFileActions,omitempty"`
	SidecarFiles     *[]actions.Sidecar `json:"sidecarFiles,omitempty"`
}

// Encode renders the document with its protocol checksum.
func (lc *LastCheckpointOut) Encode() ([]byte, error) {
	lc.Checksum = ""
	body, err := actions.MarshalUnescaped(lc)
	if err != nil {
		return nil, err
	}
	sum, err := Checksum(body)
	if err != nil {
		return nil, err
	}
	lc.Checksum = sum
	return actions.MarshalUnescaped(lc)
}

// Checksum computes the checksum of a _last_checkpoint
// document as the protocol defines it: the JSON is flattened into
// path=value pairs (object keys quoted and URL-encoded, array indexes bare,
// path parts joined by '+', string values quoted and URL-encoded, other
// values as written), the pairs are sorted by path bytes and joined with
// ',', the top-level "checksum" is skipped, and the result is MD5-hashed.
func Checksum(doc []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return "", err
	}
	delete(root, "checksum")
	type pair struct{ path, value string }
	var pairs []pair
	var walk func(path string, v any)
	walk = func(path string, v any) {
		join := func(part string) string {
			if path == "" {
				return part
			}
			return path + "+" + part
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(join(`"`+checksumEscape(k)+`"`), e)
			}
		case []any:
			for i, e := range x {
				walk(join(fmt.Sprint(i)), e)
			}
		case string:
			pairs = append(pairs, pair{path, `"` + checksumEscape(x) + `"`})
		case json.Number:
			pairs = append(pairs, pair{path, string(x)})
		case bool:
			pairs = append(pairs, pair{path, fmt.Sprint(x)})
		case nil:
			pairs = append(pairs, pair{path, "null"})
		}
	}
	walk("", root)
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].path < pairs[j].path })
	var sb strings.Builder
	for i, p := range pairs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(p.path)
		sb.WriteByte('=')
		sb.WriteString(p.value)
	}
	sum := md5.Sum([]byte(sb.String()))
	return hex.EncodeToString(sum[:]), nil
}

// checksumEscape percent-encodes every UTF-8 byte except A-Za-z0-9-._~
// with uppercase hex.
func checksumEscape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('%')
		sb.WriteByte(hexDigits[c>>4])
		sb.WriteByte(hexDigits[c&15])
	}
	return sb.String()
}
