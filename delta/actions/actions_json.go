package actions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/compactord/compactord/failure"
)

// ErrMalformedAction marks a log line that is not a valid action.
var ErrMalformedAction = failure.New(failure.Halt, "malformed action")

// Action kinds as they appear as the single key of a log line.
const (
	KindProtocol           = "protocol"
	KindMetadata           = "metaData"
	KindAdd                = "add"
	KindRemove             = "remove"
	KindTxn                = "txn"
	KindDomainMetadata     = "domainMetadata"
	KindCDC                = "cdc"
	KindCheckpointMetadata = "checkpointMetadata"
	KindSidecar            = "sidecar"
	KindCommitInfo         = "commitInfo"
)

// knownActionKind reports whether k is an action key this build models.
func knownActionKind(k string) bool {
	switch k {
	case KindProtocol, KindMetadata, KindAdd, KindRemove, KindTxn, KindDomainMetadata, KindCDC,
		KindCheckpointMetadata, KindSidecar, KindCommitInfo:
		return true
	}
	return false
}

// ParseAction parses one line of a commit (or JSON checkpoint) file. A line
// whose keys are all action kinds this build does not model is returned
// with Unknown set to the verbatim line; keys beside one known action are
// ignored, as Spark ignores them. Errors wrap ErrMalformedAction.
func ParseAction(line []byte) (Action, error) {
	var a Action
	line = bytes.TrimSpace(line)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return a, fmt.Errorf("%w: %v", ErrMalformedAction, err)
	}
	if len(top) == 0 {
		return a, fmt.Errorf("%w: no action on the line", ErrMalformedAction)
	}
	if len(top) > 1 {
		// Spark reads a line as one action and ignores keys it does not
		// know (Delta's log schema evolvability): keep the one known action,
		// refuse a line with two.
		var known []string
		for k := range top {
			if knownActionKind(k) {
				known = append(known, k)
			}
		}
		switch len(known) {
		case 0:
			a.Unknown = append(json.RawMessage(nil), line...)
			return a, nil
		case 1:
			top = map[string]json.RawMessage{known[0]: top[known[0]]}
		default:
			sort.Strings(known)
			return a, fmt.Errorf("%w: want one action per line, got %s", ErrMalformedAction, strings.Join(known, " and "))
		}
	}
	for kind, body := range top {
		if isJSONNull(body) {
			return a, fmt.Errorf("%w: %s is null", ErrMalformedAction, kind)
		}
		var err error
		switch kind {
		case KindProtocol:
			a.Protocol = new(Protocol)
			err = json.Unmarshal(body, a.Protocol)
		case KindMetadata:
			a.Metadata = new(Metadata)
			err = json.Unmarshal(body, a.Metadata)
		case KindAdd:
			a.Add = new(Add)
			if err = json.Unmarshal(body, a.Add); err == nil && a.Add.Path == "" {
				err = errors.New("add without path")
			}
		case KindRemove:
			a.Remove = new(Remove)
			if err = json.Unmarshal(body, a.Remove); err == nil && a.Remove.Path == "" {
				err = errors.New("remove without path")
			}
		case KindTxn:
			a.Txn = new(Txn)
			err = json.Unmarshal(body, a.Txn)
		case KindDomainMetadata:
			a.DomainMetadata = new(DomainMetadata)
			err = json.Unmarshal(body, a.DomainMetadata)
		case KindCDC:
			a.CDC = new(CDC)
			err = json.Unmarshal(body, a.CDC)
		case KindCheckpointMetadata:
			a.CheckpointMetadata = new(CheckpointMetadata)
			err = json.Unmarshal(body, a.CheckpointMetadata)
		case KindSidecar:
			a.Sidecar = new(Sidecar)
			err = json.Unmarshal(body, a.Sidecar)
		case KindCommitInfo:
			err = json.Unmarshal(body, &a.CommitInfo)
		default:
			a.Unknown = append(json.RawMessage(nil), line...)
		}
		if err != nil {
			return Action{}, fmt.Errorf("%w: %s: %v", ErrMalformedAction, kind, err)
		}
	}
	return a, nil
}

// MarshalAction returns the action as one JSON line (without the newline).
func MarshalAction(a Action) ([]byte, error) { return a.MarshalJSON() }

// MarshalJSON encodes the action as {"<kind>": {...}}.
func (a Action) MarshalJSON() ([]byte, error) {
	kind, body := a.kindAndBody()
	if kind == "" {
		if a.Unknown != nil {
			var buf bytes.Buffer
			if err := json.Compact(&buf, a.Unknown); err != nil {
				return nil, fmt.Errorf("marshal unknown action: %w", err)
			}
			return buf.Bytes(), nil
		}
		return nil, errors.New("marshal action: no action set")
	}
	b, err := MarshalUnescaped(body)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", kind, err)
	}
	out := make([]byte, 0, len(b)+len(kind)+5)
	out = append(out, '{', '"')
	out = append(out, kind...)
	out = append(out, '"', ':')
	out = append(out, b...)
	return append(out, '}'), nil
}

// Kind returns the action's JSON key ("add", "remove", "metaData", ...), or
// the empty string for an unknown action.
func (a Action) Kind() string {
	k, _ := a.kindAndBody()
	return k
}

func (a Action) kindAndBody() (string, any) {
	switch {
	case a.Protocol != nil:
		return KindProtocol, a.Protocol
	case a.Metadata != nil:
		return KindMetadata, a.Metadata
	case a.Add != nil:
		return KindAdd, a.Add
	case a.Remove != nil:
		return KindRemove, a.Remove
	case a.Txn != nil:
		return KindTxn, a.Txn
	case a.DomainMetadata != nil:
		return KindDomainMetadata, a.DomainMetadata
	case a.CDC != nil:
		return KindCDC, a.CDC
	case a.CheckpointMetadata != nil:
		return KindCheckpointMetadata, a.CheckpointMetadata
	case a.Sidecar != nil:
		return KindSidecar, a.Sidecar
	case a.CommitInfo != nil:
		return KindCommitInfo, a.CommitInfo
	}
	return "", nil
}

// MarshalUnescaped is json.Marshal without HTML escaping (log lines carry SQL
// predicates such as "id < 5" that Spark writes unescaped).
func MarshalUnescaped(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func isJSONNull(b []byte) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }

// decodeWithExtra decodes data into known (a pointer to an alias struct
// without methods) and returns the object fields that no struct field names.
func decodeWithExtra(data []byte, known any) (Extra, error) {
	if err := json.Unmarshal(data, known); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	t := reflect.TypeOf(known).Elem()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			delete(all, name)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	return Extra(all), nil
}

// encodeWithExtra encodes known (an alias struct) and appends the extra
// fields, sorted by key, to the object.
func encodeWithExtra(known any, extra Extra) ([]byte, error) {
	b, err := MarshalUnescaped(known)
	if err != nil {
		return nil, err
	}
	if len(extra) == 0 {
		return b, nil
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = b[:len(b)-1] // drop '}'
	for _, k := range keys {
		if len(b) > 1 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		b = append(b, kb...)
		b = append(b, ':')
		var v bytes.Buffer
		if err := json.Compact(&v, extra[k]); err != nil {
			return nil, fmt.Errorf("extra field %q: %w", k, err)
		}
		b = append(b, v.Bytes()...)
	}
	return append(b, '}'), nil
}

// withEmptyMap returns extra plus name:{} when add is true: an empty but
// present map (omitted by omitempty) must survive a round trip.
func withEmptyMap(extra Extra, name string, add bool) Extra {
	if !add {
		return extra
	}
	out := make(Extra, len(extra)+1)
	for k, v := range extra {
		out[k] = v
	}
	out[name] = json.RawMessage("{}")
	return out
}

// UnmarshalJSON decodes a protocol action, keeping unknown fields in Extra.
func (p *Protocol) UnmarshalJSON(data []byte) error {
	type plain Protocol
	return decodeInto(data, (*plain)(p), &p.Extra)
}

// MarshalJSON encodes a protocol action with its Extra fields. The
// feature lists are written whenever the versions require them (reader 3,
// writer 7), even when empty, and omitted otherwise unless set.
func (p Protocol) MarshalJSON() ([]byte, error) {
	type listed struct {
		MinReaderVersion int      `json:"minReaderVersion"`
		MinWriterVersion int      `json:"minWriterVersion"`
		ReaderFeatures   []string `json:"readerFeatures"`
		WriterFeatures   []string `json:"writerFeatures"`
	}
	v := listed{p.MinReaderVersion, p.MinWriterVersion, p.ReaderFeatures, p.WriterFeatures}
	if v.ReaderFeatures == nil && p.MinReaderVersion >= 3 {
		v.ReaderFeatures = []string{}
	}
	if v.WriterFeatures == nil && p.MinWriterVersion >= 7 {
		v.WriterFeatures = []string{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// Drop the lists that are nil (not required and not set).
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if v.ReaderFeatures == nil {
		delete(m, "readerFeatures")
	}
	if v.WriterFeatures == nil {
		delete(m, "writerFeatures")
	}
	for k, raw := range p.Extra {
		m[k] = raw
	}
	return MarshalUnescaped(m)
}

// UnmarshalJSON decodes a metaData action, keeping unknown fields in Extra.
func (m *Metadata) UnmarshalJSON(data []byte) error {
	type plain Metadata
	return decodeInto(data, (*plain)(m), &m.Extra)
}

// MarshalJSON encodes a metaData action with its Extra fields. Nil maps
// and slices are written as empty ones, as the protocol requires.
func (m Metadata) MarshalJSON() ([]byte, error) {
	type plain Metadata
	v := plain(m)
	if v.Format.Options == nil {
		v.Format.Options = map[string]string{}
	}
	if v.PartitionColumns == nil {
		v.PartitionColumns = []string{}
	}
	if v.Configuration == nil {
		v.Configuration = map[string]string{}
	}
	return encodeWithExtra(v, m.Extra)
}

// UnmarshalJSON decodes a DV descriptor, keeping unknown fields in Extra.
// An explicit "offset":null leaves Offset nil.
func (dv *DeletionVector) UnmarshalJSON(data []byte) error {
	type plain DeletionVector
	var v plain
	extra, err := decodeWithExtra(data, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*dv = DeletionVector(v)
	return nil
}

// MarshalJSON encodes a DV descriptor with its Extra fields.
func (dv DeletionVector) MarshalJSON() ([]byte, error) {
	type plain DeletionVector
	return encodeWithExtra(plain(dv), dv.Extra)
}

// UnmarshalJSON decodes an add action, keeping unknown fields in Extra.
func (a *Add) UnmarshalJSON(data []byte) error {
	type plain Add
	return decodeInto(data, (*plain)(a), &a.Extra)
}

// MarshalJSON encodes an add action with its Extra fields (ParsedStats is
// not serialized; Stats is written as is).
func (a Add) MarshalJSON() ([]byte, error) {
	type plain Add
	v := plain(a)
	if v.PartitionValues == nil {
		v.PartitionValues = map[string]*string{}
	}
	return encodeWithExtra(v, withEmptyMap(a.Extra, "tags", a.Tags != nil && len(a.Tags) == 0))
}

// UnmarshalJSON decodes a remove action, keeping unknown fields in Extra.
func (r *Remove) UnmarshalJSON(data []byte) error {
	type plain Remove
	return decodeInto(data, (*plain)(r), &r.Extra)
}

// MarshalJSON encodes a remove action with its Extra fields.
func (r Remove) MarshalJSON() ([]byte, error) {
	type plain Remove
	extra := withEmptyMap(r.Extra, "partitionValues", r.PartitionValues != nil && len(r.PartitionValues) == 0)
	extra = withEmptyMap(extra, "tags", r.Tags != nil && len(r.Tags) == 0)
	return encodeWithExtra(plain(r), extra)
}

// UnmarshalJSON decodes a txn action, keeping unknown fields in Extra.
func (t *Txn) UnmarshalJSON(data []byte) error {
	type plain Txn
	return decodeInto(data, (*plain)(t), &t.Extra)
}

// MarshalJSON encodes a txn action with its Extra fields.
func (t Txn) MarshalJSON() ([]byte, error) {
	type plain Txn
	return encodeWithExtra(plain(t), t.Extra)
}

// UnmarshalJSON decodes a domainMetadata action, keeping unknown fields in Extra.
func (d *DomainMetadata) UnmarshalJSON(data []byte) error {
	type plain DomainMetadata
	return decodeInto(data, (*plain)(d), &d.Extra)
}

// MarshalJSON encodes a domainMetadata action with its Extra fields.
func (d DomainMetadata) MarshalJSON() ([]byte, error) {
	type plain DomainMetadata
	return encodeWithExtra(plain(d), d.Extra)
}

// UnmarshalJSON decodes a cdc action, keeping unknown fields in Extra.
func (c *CDC) UnmarshalJSON(data []byte) error {
	type plain CDC
	return decodeInto(data, (*plain)(c), &c.Extra)
}

// MarshalJSON encodes a cdc action with its Extra fields.
func (c CDC) MarshalJSON() ([]byte, error) {
	type plain CDC
	v := plain(c)
	if v.PartitionValues == nil {
		v.PartitionValues = map[string]*string{}
	}
	return encodeWithExtra(v, withEmptyMap(c.Extra, "tags", c.Tags != nil && len(c.Tags) == 0))
}

// UnmarshalJSON decodes a checkpointMetadata action, keeping unknown fields in Extra.
func (c *CheckpointMetadata) UnmarshalJSON(data []byte) error {
	type plain CheckpointMetadata
	return decodeInto(data, (*plain)(c), &c.Extra)
}

// MarshalJSON encodes a checkpointMetadata action with its Extra fields.
func (c CheckpointMetadata) MarshalJSON() ([]byte, error) {
	type plain CheckpointMetadata
	return encodeWithExtra(plain(c), withEmptyMap(c.Extra, "tags", c.Tags != nil && len(c.Tags) == 0))
}

// UnmarshalJSON decodes a sidecar action, keeping unknown fields in Extra.
func (s *Sidecar) UnmarshalJSON(data []byte) error {
	type plain Sidecar
	return decodeInto(data, (*plain)(s), &s.Extra)
}

// MarshalJSON encodes a sidecar action with its Extra fields.
func (s Sidecar) MarshalJSON() ([]byte, error) {
	type plain Sidecar
	return encodeWithExtra(plain(s), withEmptyMap(s.Extra, "tags", s.Tags != nil && len(s.Tags) == 0))
}

// InCommitTimestamp returns commitInfo.inCommitTimestamp when present.
func (c CommitInfo) InCommitTimestamp() (int64, bool) {
	raw, ok := c["inCommitTimestamp"]
	if !ok {
		return 0, false
	}
	var ts int64
	if err := json.Unmarshal(raw, &ts); err != nil {
		return 0, false
	}
	return ts, true
}

// Operation returns commitInfo.operation ("" when absent).
func (c CommitInfo) Operation() string {
	var s string
	_ = json.Unmarshal(c["operation"], &s)
	return s
}

// EngineInfo returns commitInfo.engineInfo ("" when absent).
func (c CommitInfo) EngineInfo() string {
	var s string
	_ = json.Unmarshal(c["engineInfo"], &s)
	return s
}

// decodeInto decodes data into *v (a method-less copy of an action type,
// so that decoding does not recurse into UnmarshalJSON) and stores the
// fields it does not model in *extra.
func decodeInto[P any](data []byte, v *P, extra *Extra) error {
	var tmp P
	e, err := decodeWithExtra(data, &tmp)
	if err != nil {
		return err
	}
	*v = tmp
	*extra = e
	return nil
}
