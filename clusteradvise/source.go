package clusteradvise

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/compactord/compactord/delta/actions"
)

// Bounds of a pushed batch.
const (
	// MaxPushLines is the most lines one batch may hold.
	MaxPushLines = 10000
	// maxPushLine is the longest line read (a predicate of MaxPredicateLen
	// with its JSON around it).
	maxPushLine = 2*MaxPredicateLen + 256
)

// The DML operations whose predicates are evidence, as Spark and
// Databricks name them in commitInfo.operation.
var dmlOperations = map[string]bool{"DELETE": true, "UPDATE": true, "MERGE": true}

// CommitPredicates returns the predicate texts of a DML commit's
// commitInfo: operationParameters.predicate of DELETE and UPDATE (Spark
// writes a JSON list of texts, `["(id#478L < 5)"]`; older writers the bare
// text) and, for MERGE, the merge condition and the `predicate` of each
// clause in matchedPredicates, notMatchedPredicates and
// notMatchedBySourcePredicates (JSON lists of {"actionType", "predicate"}).
// Other operations, and a literal `true`, give nothing.
func CommitPredicates(ci actions.CommitInfo) []string {
	if !dmlOperations[ci.Operation()] {
		return nil
	}
	raw, ok := ci["operationParameters"]
	if !ok {
		return nil
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(raw, &params) != nil {
		return nil
	}
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s != "" && !strings.EqualFold(s, "true") && len(s) <= MaxPredicateLen {
			out = append(out, s)
		}
	}
	if s, ok := paramString(params["predicate"]); ok {
		var list []string
		if strings.HasPrefix(strings.TrimSpace(s), "[") && json.Unmarshal([]byte(s), &list) == nil {
			for _, p := range list {
				add(p)
			}
		} else {
			add(s)
		}
	}
	if ci.Operation() == "MERGE" {
		for _, k := range []string{"matchedPredicates", "notMatchedPredicates", "notMatchedBySourcePredicates"} {
			s, ok := paramString(params[k])
			if !ok {
				continue
			}
			var clauses []struct {
				Predicate string `json:"predicate"`
			}
			if json.Unmarshal([]byte(s), &clauses) != nil {
				continue
			}
			for _, c := range clauses {
				add(c.Predicate)
			}
		}
	}
	return out
}

// paramString reads an operationParameters value: a JSON string (Spark
// writes every parameter as one), or any other JSON as its text.
func paramString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return string(raw), true
}

// CommitTime is a commit's time from its commitInfo: the in-commit
// timestamp, else commitInfo.timestamp; ok=false when it has neither.
func CommitTime(ci actions.CommitInfo) (time.Time, bool) {
	if ms, ok := ci.InCommitTimestamp(); ok {
		return time.UnixMilli(ms).UTC(), true
	}
	var ms int64
	if raw, ok := ci["timestamp"]; ok && json.Unmarshal(raw, &ms) == nil && ms > 0 {
		return time.UnixMilli(ms).UTC(), true
	}
	return time.Time{}, false
}

// Pushed is one predicate an engine or a query log reported, as a JSON
// line: {"predicate": "<Spark SQL boolean expression>", "weight": n,
// "time": "<RFC 3339>"}. weight (default 1) is how many scans it stands
// for; time (default: when it is received) is when they ran.
type Pushed struct {
	Predicate string    `json:"predicate"`
	Weight    float64   `json:"weight,omitempty"`
	Time      time.Time `json:"time,omitzero"`
}

// ReadPushed reads a batch of JSON lines (blank lines skipped), filling
// default weights and times (now). It refuses the whole batch at the first
// bad line, naming it, so nothing of a malformed batch is recorded.
func ReadPushed(r io.Reader, now time.Time) ([]Pushed, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxPushLine)
	var out []Pushed
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if len(out) == MaxPushLines {
			return nil, fmt.Errorf("line %d: more than %d predicates in one batch", line, MaxPushLines)
		}
		var p Pushed
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		p.Predicate = strings.TrimSpace(p.Predicate)
		switch {
		case p.Predicate == "":
			return nil, fmt.Errorf("line %d: no predicate", line)
		case len(p.Predicate) > MaxPredicateLen:
			return nil, fmt.Errorf("line %d: predicate of %d bytes, over %d", line, len(p.Predicate), MaxPredicateLen)
		case p.Weight < 0 || math.IsNaN(p.Weight) || math.IsInf(p.Weight, 0):
			return nil, fmt.Errorf("line %d: weight %v: want a positive number", line, p.Weight)
		}
		if p.Weight == 0 {
			p.Weight = 1
		}
		if p.Time.IsZero() {
			p.Time = now
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return out, nil
}
