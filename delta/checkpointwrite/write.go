package checkpointwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/actions"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/pq"
	deltaprops "github.com/compactord/compactord/delta/props"
	deltaschema "github.com/compactord/compactord/delta/schema"
	deltastats "github.com/compactord/compactord/delta/stats"
	"github.com/compactord/compactord/internal/progress"
	"github.com/compactord/compactord/objstore"
)

// ErrCheckpointExists is wrapped by WriteCheckpoint when the checkpoint file
// it would create already exists (another writer checkpointed the version).
var ErrCheckpointExists = errors.New("checkpoint already exists")

// Defaults of CheckpointOptions.
const (
	// DefaultSidecarActions is Spark's file actions per V2 sidecar
	// (DELTA_CHECKPOINT_PART_SIZE for V2 checkpoints).
	DefaultSidecarActions = 50_000
	// DefaultCheckpointRowGroupRows bounds the rows a checkpoint writer
	// buffers before it flushes a row group.
	DefaultCheckpointRowGroupRows = 100_000
	// lastCheckpointInlineLimit is how many non-file actions and sidecars
	// _last_checkpoint inlines for a V2 checkpoint (Spark's thresholds).
	lastCheckpointInlineLimit = 30
)

// CheckpointOptions steer WriteCheckpoint. The zero value is usable.
type CheckpointOptions struct {
	// Now is the instant tombstones and txn entries expire against
	// (deletionTimestamp within delta.deletedFileRetentionDuration,
	// lastUpdated within delta.setTransactionRetentionDuration); zero =
	// time.Now().
	Now time.Time
	// SidecarActions is the number of file actions per sidecar of a V2
	// checkpoint; 0 = DefaultSidecarActions.
	SidecarActions int
	// RowGroupRows bounds a parquet row group; 0 =
	// DefaultCheckpointRowGroupRows.
	RowGroupRows int64
	// SkipLastCheckpoint leaves _delta_log/_last_checkpoint alone.
	SkipLastCheckpoint bool
	// Progress, when set, receives the write's progress: file actions
	// (live adds, then kept tombstones) written of their total, and the
	// bytes of the files they describe (phase "write").
	Progress progress.Func
}

// CheckpointInfo describes a checkpoint WriteCheckpoint wrote.
type CheckpointInfo struct {
	// Version is the table version checkpointed.
	Version int64 `json:"version"`
	// Key is the checkpoint's (top-level) file, relative to the table root.
	Key string `json:"key"`
	// V2 is set for a UUID-named V2 checkpoint with sidecars.
	V2 bool `json:"v2"`
	// Sidecars are the sidecar files (keys) of a V2 checkpoint.
	Sidecars []string `json:"sidecars,omitempty"`
	// Actions is the number of actions written (_last_checkpoint.size).
	Actions int64 `json:"actions"`
	// SizeInBytes is the size of every file written.
	SizeInBytes int64 `json:"sizeInBytes"`
	// NumAddFiles is the number of add actions.
	NumAddFiles int64 `json:"numAddFiles"`
	// Tombstones is the number of unexpired removes kept; Expired the
	// number of expired ones left out.
	Tombstones int64 `json:"tombstones"`
	Expired    int64 `json:"expiredTombstones"`
	// ExpiredTxns is the number of txn entries left out as expired.
	ExpiredTxns int `json:"expiredTxns"`
	// LastCheckpoint reports whether _last_checkpoint now points at this
	// checkpoint (false when it already named a newer one, or when skipped).
	LastCheckpoint bool `json:"lastCheckpoint"`
}

// WriteCheckpoint writes a checkpoint of snap (which must have been loaded
// from t) and then points _delta_log/_last_checkpoint at it.
//
// The checkpoint holds exactly what PROTOCOL.md "Checkpoints" asks for:
// protocol, metaData, every live add (with dataChange=false), unexpired
// tombstones (dataChange=false, no stats or tags), txn entries minus the
// expired ones, live domainMetadata; never commitInfo or cdc. It is a
// classic single-file parquet checkpoint with Spark's schema, or, on a
// table with the v2Checkpoint feature and delta.checkpointPolicy=v2, a
// UUID-named JSON V2 checkpoint whose file actions are in parquet sidecars.
// Rows are streamed to the store: memory stays within one row group per
// file on top of the snapshot itself.
//
// Files appear atomically (object-store PUT, local temp file + rename);
// an interrupted write leaves no checkpoint. When the classic checkpoint
// of the version already exists the error wraps ErrCheckpointExists.
// _last_checkpoint is replaced in one write after the checkpoint exists,
// and never moved back to an older version.
func WriteCheckpoint(ctx context.Context, t *delta.Table, snap *delta.Snapshot, opts CheckpointOptions) (*CheckpointInfo, error) {
	if err := delta.CheckpointWritable(snap); err != nil {
		return nil, fmt.Errorf("table %s: checkpoint version %d: %w", t.URL, snap.Version, err)
	}
	if snap.IsSlim() {
		return nil, fmt.Errorf("table %s: checkpoint version %d: the snapshot is slim (its stats are cut down): load the full snapshot", t.URL, snap.Version)
	}
	props, err := checkpointProperties(snap)
	if err != nil {
		return nil, fmt.Errorf("table %s: checkpoint version %d: %w", t.URL, snap.Version, err)
	}
	cols, err := checkpointColumns(snap, props)
	if err != nil {
		return nil, fmt.Errorf("table %s: checkpoint version %d: %w", t.URL, snap.Version, err)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	w := &checkpointWrite{t: t, snap: snap, opts: opts, cols: cols}
	w.selectLive(now, props)
	pv, err := newPartitionParser(snap)
	if err != nil {
		return nil, fmt.Errorf("table %s: checkpoint version %d: %w", t.URL, snap.Version, err)
	}
	w.pv = pv
	if opts.Progress != nil {
		var described int64
		for _, f := range snap.Files {
			described += f.Size
		}
		for _, r := range w.tombstones {
			if r.Size != nil {
				described += *r.Size
			}
		}
		w.progress = progress.Start(opts.Progress, "checkpoint", "write", int64(len(snap.Files)+len(w.tombstones)), described, now)
	}

	var info *CheckpointInfo
	var lc *logpath.LastCheckpointOut
	if snap.Protocol.HasFeature("v2Checkpoint") && props.CheckpointPolicy == deltaprops.CheckpointPolicyV2 {
		info, lc, err = w.writeV2(ctx)
	} else {
		info, lc, err = w.writeClassic(ctx)
	}
	if err != nil {
		return nil, err
	}
	if !opts.SkipLastCheckpoint {
		if info.LastCheckpoint, err = writeLastCheckpoint(ctx, t, lc); err != nil {
			return info, err
		}
	}
	return info, nil
}

// checkpointWrite is one WriteCheckpoint call.
type checkpointWrite struct {
	t          *delta.Table
	snap       *delta.Snapshot
	opts       CheckpointOptions
	cols       cpColumns
	pv         *partitionParser
	tombstones []*actions.Remove
	txns       []actions.Txn
	domains    []actions.DomainMetadata
	info       CheckpointInfo
	progress   *progress.Tracker
}

// selectLive applies tombstone and txn expiry and orders the non-file
// actions deterministically.
func (w *checkpointWrite) selectLive(now time.Time, props *deltaprops.Properties) {
	w.info.Version = w.snap.Version
	minDeletion := now.UnixMilli() - props.DeletedFileRetention.Milliseconds()
	for _, r := range w.snap.Tombstones {
		// A tombstone without deletionTimestamp counts as deleted at 0
		// (Spark's delTimestamp): expired.
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp > minDeletion {
			w.tombstones = append(w.tombstones, r)
			continue
		}
		w.info.Expired++
	}
	w.info.Tombstones = int64(len(w.tombstones))
	minTxn := now.UnixMilli() - props.SetTransactionRetention.Milliseconds()
	for _, tx := range w.snap.Txns {
		if props.SetTransactionRetention > 0 && (tx.LastUpdated == nil || *tx.LastUpdated <= minTxn) {
			w.info.ExpiredTxns++
			continue
		}
		w.txns = append(w.txns, tx)
	}
	sort.Slice(w.txns, func(i, j int) bool { return w.txns[i].AppID < w.txns[j].AppID })
	for _, d := range w.snap.Domains {
		if !d.Removed {
			w.domains = append(w.domains, d)
		}
	}
	sort.Slice(w.domains, func(i, j int) bool { return w.domains[i].Domain < w.domains[j].Domain })
}

// nonFileActions are the actions a V2 checkpoint keeps in its top-level
// file (and classic checkpoints write first).
func (w *checkpointWrite) nonFileActions() []actions.Action {
	p, m := w.snap.Protocol, w.snap.Metadata
	acts := []actions.Action{{Protocol: &p}, {Metadata: &m}}
	for i := range w.domains {
		acts = append(acts, actions.Action{DomainMetadata: &w.domains[i]})
	}
	for i := range w.txns {
		acts = append(acts, actions.Action{Txn: &w.txns[i]})
	}
	return acts
}

func (w *checkpointWrite) writeClassic(ctx context.Context) (*CheckpointInfo, *logpath.LastCheckpointOut, error) {
	key := logpath.CheckpointKey(w.snap.Version)
	s := newCPSchema(layoutClassic, w.cols)
	f, err := newParquetObject(ctx, w.t, key, s, w.opts.RowGroupRows)
	if err != nil {
		return nil, nil, err
	}
	defer f.abort()
	for _, a := range w.nonFileActions() {
		if err := f.action(a); err != nil {
			return nil, nil, err
		}
	}
	adds, err := w.fileActions(f, 0, int64(len(w.snap.Files))+int64(len(w.tombstones)))
	if err != nil {
		return nil, nil, err
	}
	size, err := f.close(ctx)
	if err != nil {
		return nil, nil, err
	}
	info := w.info
	info.Key, info.Actions, info.SizeInBytes, info.NumAddFiles = key, f.rows, size, adds
	return &info, &logpath.LastCheckpointOut{Version: info.Version, Size: info.Actions, SizeInBytes: size, NumOfAddFiles: adds}, nil
}

// progressBatch is how many file actions a checkpoint writes between two
// progress reports.
const progressBatch = 4096

// fileActions writes file actions [lo, hi) of the sequence "live adds,
// then kept tombstones" to f and returns the number of adds written.
func (w *checkpointWrite) fileActions(f *parquetObject, lo, hi int64) (int64, error) {
	nf := int64(len(w.snap.Files))
	var adds, n, described int64
	for i := lo; i < hi; i++ {
		var err error
		if i < nf {
			err = f.add(w.snap.Files[i], w.pv)
			adds++
			described += w.snap.Files[i].Size
		} else {
			r := w.tombstones[i-nf]
			f.rb.removeRow(r)
			err = f.emit()
			if r.Size != nil {
				described += *r.Size
			}
		}
		if err != nil {
			return adds, err
		}
		// Reported in batches: a checkpoint has millions of actions.
		if n++; n == progressBatch {
			w.progress.Add(n, described)
			n, described = 0, 0
		}
	}
	w.progress.Add(n, described)
	return adds, nil
}

func (w *checkpointWrite) writeV2(ctx context.Context) (*CheckpointInfo, *logpath.LastCheckpointOut, error) {
	v := w.snap.Version
	per := int64(w.opts.SidecarActions)
	if per <= 0 {
		per = DefaultSidecarActions
	}
	total := int64(len(w.snap.Files)) + int64(len(w.tombstones))
	parts := (total + per - 1) / per
	info := w.info
	info.V2 = true
	var sidecars []actions.Sidecar
	var fileRows, sideBytes, adds int64
	s := newCPSchema(layoutSidecar, w.cols)
	for p := int64(0); p < parts; p++ {
		name := fmt.Sprintf("%020d.checkpoint.%010d.%010d.%s.parquet", v, p+1, parts, uuid.NewString())
		key := logpath.SidecarDir + name
		f, err := newParquetObject(ctx, w.t, key, s, w.opts.RowGroupRows)
		if err != nil {
			return nil, nil, err
		}
		n, err := w.fileActions(f, p*per, min((p+1)*per, total))
		if err != nil {
			f.abort()
			return nil, nil, err
		}
		size, err := f.close(ctx)
		if err != nil {
			return nil, nil, err
		}
		attrs, err := w.t.Bucket.Attributes(ctx, key)
		if err != nil {
			return nil, nil, fmt.Errorf("table %s: stat %s: %w", w.t.URL, key, err)
		}
		adds += n
		fileRows += f.rows
		sideBytes += size
		sidecars = append(sidecars, actions.Sidecar{Path: name, SizeInBytes: size, ModificationTime: attrs.ModTime.UnixMilli()})
		info.Sidecars = append(info.Sidecars, key)
	}
	cm := actions.CheckpointMetadata{Version: v, Tags: map[string]string{
		"sidecarNumActions":  strconv.FormatInt(fileRows, 10),
		"sidecarSizeInBytes": strconv.FormatInt(sideBytes, 10),
		"numOfAddFiles":      strconv.FormatInt(adds, 10),
	}}
	nonFile := w.nonFileActions()
	top := []actions.Action{{CheckpointMetadata: &cm}}
	for i := range sidecars {
		top = append(top, actions.Action{Sidecar: &sidecars[i]})
	}
	top = append(top, nonFile...)
	var buf bytes.Buffer
	for _, a := range top {
		b, err := actions.MarshalAction(a)
		if err != nil {
			return nil, nil, fmt.Errorf("table %s: checkpoint %d: %w", w.t.URL, v, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	name := fmt.Sprintf("%020d.checkpoint.%s.json", v, uuid.NewString())
	key := logpath.LogDir + name
	if err := uploadBytes(ctx, w.t.Bucket, key, buf.Bytes(), "application/json", true); err != nil {
		return nil, nil, fmt.Errorf("table %s: write %s: %w", w.t.URL, key, err)
	}
	attrs, err := w.t.Bucket.Attributes(ctx, key)
	if err != nil {
		return nil, nil, fmt.Errorf("table %s: stat %s: %w", w.t.URL, key, err)
	}
	info.Key = key
	info.Actions = fileRows + int64(len(top))
	info.SizeInBytes = sideBytes + int64(buf.Len())
	info.NumAddFiles = adds
	lv2 := &logpath.LastV2{Path: name, SizeInBytes: int64(buf.Len()), ModificationTime: attrs.ModTime.UnixMilli()}
	if inline := append(append([]actions.Action(nil), nonFile...), actions.Action{CheckpointMetadata: &cm}); len(inline) <= lastCheckpointInlineLimit {
		lv2.NonFileActions = &inline
	}
	if len(sidecars) <= lastCheckpointInlineLimit {
		sc := slices.Clone(sidecars)
		if sc == nil {
			sc = []actions.Sidecar{}
		}
		lv2.SidecarFiles = &sc
	}
	return &info, &logpath.LastCheckpointOut{Version: v, Size: info.Actions, SizeInBytes: info.SizeInBytes, NumOfAddFiles: adds, V2Checkpoint: lv2}, nil
}

// WriteCompatCheckpoint writes the classic-named compatibility checkpoint
// of a version that has only a UUID-named V2 checkpoint: the same V2
// content (checkpointMetadata, sidecar references, non-file actions, any
// inline file actions) under "%020d.checkpoint.parquet", so that clients
// that do not know V2 checkpoints find the protocol and fail cleanly
// (PROTOCOL.md "Handling Backward compatibility while moving to UUID-named
// v2 Checkpoints"; Spark writes it before log cleanup). It returns the key
// written, or "" when a classic-named checkpoint already exists or the
// version has no V2 checkpoint.
func WriteCompatCheckpoint(ctx context.Context, t *delta.Table, version int64) (string, error) {
	files, err := delta.ListLogFiles(ctx, t)
	if err != nil {
		return "", fmt.Errorf("table %s: %w", t.URL, err)
	}
	var v2 *logpath.File
	for i, f := range files {
		if f.Version != version {
			continue
		}
		switch f.Kind {
		case logpath.Checkpoint:
			return "", nil
		case logpath.V2Checkpoint:
			if v2 == nil {
				v2 = &files[i]
			}
		}
	}
	if v2 == nil {
		return "", nil
	}
	acts, err := delta.ReadCheckpointFile(ctx, t, v2.Key)
	if err != nil {
		return "", err
	}
	key := logpath.CheckpointKey(version)
	s := newCPSchema(layoutV2Top, cpColumns{statsJSON: true})
	f, err := newParquetObject(ctx, t, key, s, 0)
	if err != nil {
		return "", err
	}
	defer f.abort()
	for _, a := range acts.Actions() {
		if err := f.action(a); err != nil {
			return "", err
		}
	}
	if _, err := f.close(ctx); err != nil {
		if errors.Is(err, ErrCheckpointExists) {
			return "", nil
		}
		return "", err
	}
	return key, nil
}

// partitionParser turns an add's partitionValues into the typed values of
// partitionValues_parsed.
type partitionParser struct {
	fields []*deltaschema.StructField
	names  []string
	out    map[string]any
}

func newPartitionParser(snap *delta.Snapshot) (*partitionParser, error) {
	mode, fields, err := partitionColumns(snap)
	if err != nil {
		return nil, err
	}
	p := &partitionParser{fields: fields, out: map[string]any{}}
	for _, f := range fields {
		p.names = append(p.names, deltaschema.PhysName(f, mode))
	}
	return p, nil
}

// parse returns the typed values keyed by physical name; a value that does
// not parse is null (as Spark's CAST with ANSI off). The map is reused.
func (p *partitionParser) parse(values map[string]*string) map[string]any {
	clear(p.out)
	for i, f := range p.fields {
		raw, ok := values[p.names[i]]
		if !ok {
			raw = values[f.Name]
		}
		if v, err := actions.ParsePartitionValue(raw, f.Type, time.UTC); err == nil && v != nil {
			p.out[p.names[i]] = v
		}
	}
	return p.out
}

// parquetObject is one checkpoint or sidecar parquet file being streamed
// to the store.
type parquetObject struct {
	t      *delta.Table
	key    string
	cancel context.CancelFunc
	bw     *blob.Writer
	cw     *pq.CountingWriter
	pw     *parquet.Writer
	rb     *rowBuilder
	batch  []parquet.Row
	n      int
	rows   int64
	done   bool
}

const checkpointBatchRows = 512

func newParquetObject(ctx context.Context, t *delta.Table, key string, s *cpSchema, rowGroupRows int64) (*parquetObject, error) {
	if rowGroupRows <= 0 {
		rowGroupRows = DefaultCheckpointRowGroupRows
	}
	wctx, cancel := context.WithCancel(ctx)
	bw, err := t.Bucket.NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/octet-stream", IfNotExist: true})
	if err != nil {
		cancel()
		if objstore.Code(err) == gcerrors.FailedPrecondition {
			return nil, fmt.Errorf("table %s: %s: %w", t.URL, key, ErrCheckpointExists)
		}
		return nil, fmt.Errorf("table %s: create %s: %w", t.URL, key, err)
	}
	cw := &pq.CountingWriter{W: bw}
	opts := []parquet.WriterOption{
		s.schema,
		parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		parquet.CreatedBy("compactord", "dev", ""),
	}
	pw := parquet.NewWriter(cw, append(opts, unboundedStringColumns(s.schema)...)...)
	return &parquetObject{t: t, key: key, cancel: cancel, bw: bw, cw: cw, pw: pw, rb: newRowBuilder(s),
		batch: make([]parquet.Row, checkpointBatchRows)}, nil
}

// emit moves the row the builder holds into the batch, writing the batch
// when full.
func (o *parquetObject) emit() error {
	o.batch[o.n] = o.rb.finish(o.batch[o.n])
	o.n++
	o.rows++
	if o.n == len(o.batch) {
		return o.flushBatch()
	}
	return nil
}

func (o *parquetObject) flushBatch() error {
	if o.n == 0 {
		return nil
	}
	if _, err := o.pw.WriteRows(o.batch[:o.n]); err != nil {
		return fmt.Errorf("table %s: write %s: %w", o.t.URL, o.key, err)
	}
	o.n = 0
	return nil
}

func (o *parquetObject) add(a *actions.Add, pv *partitionParser) error {
	st := a.ParsedStats
	if st == nil && a.Stats != "" && o.rb.s.statsParsed != nil {
		// Unparseable stats carry no bound: stats_parsed stays null.
		st, _ = deltastats.ParseStats(a.Stats)
	}
	var parts map[string]any
	if o.rb.s.pvParsed != nil && pv != nil {
		parts = pv.parse(a.PartitionValues)
	}
	stats := ""
	if o.rb.s.add.child("stats") != nil {
		stats = statsJSON(a)
	}
	o.rb.addRow(a, stats, st, parts)
	return o.emit()
}

// action writes one action of any checkpoint kind.
func (o *parquetObject) action(a actions.Action) error {
	b := o.rb
	switch {
	case a.Add != nil:
		return o.add(a.Add, nil)
	case a.Remove != nil:
		b.removeRow(a.Remove)
	case a.Protocol != nil:
		b.protocolRow(a.Protocol)
	case a.Metadata != nil:
		b.metadataRow(a.Metadata)
	case a.Txn != nil:
		b.txnRow(a.Txn)
	case a.DomainMetadata != nil:
		b.domainRow(a.DomainMetadata)
	case a.CheckpointMetadata != nil && b.s.cpMeta != nil:
		b.checkpointMetadataRow(a.CheckpointMetadata)
	case a.Sidecar != nil && b.s.sidecar != nil:
		b.sidecarRow(a.Sidecar)
	default:
		return fmt.Errorf("table %s: %s: a %s action has no place in this checkpoint", o.t.URL, o.key, a.Kind())
	}
	return o.emit()
}

// close finishes the file and publishes it; it returns the file's size.
func (o *parquetObject) close(ctx context.Context) (int64, error) {
	if err := o.flushBatch(); err != nil {
		return 0, err
	}
	if err := o.pw.Close(); err != nil {
		return 0, fmt.Errorf("table %s: finish %s: %w", o.t.URL, o.key, err)
	}
	o.done = true
	defer o.cancel()
	if err := closeBlobWriter(o.bw); err != nil {
		if objstore.Code(err) == gcerrors.FailedPrecondition {
			return 0, fmt.Errorf("table %s: %s: %w", o.t.URL, o.key, ErrCheckpointExists)
		}
		return 0, fmt.Errorf("table %s: publish %s: %w", o.t.URL, o.key, err)
	}
	return o.cw.N, nil
}

// abort discards an unfinished file: cancelling the writer's context before
// Close makes gocloud drop the upload.
func (o *parquetObject) abort() {
	if o.done {
		return
	}
	o.done = true
	o.cancel()
	_ = closeBlobWriter(o.bw)
}

// closeBlobWriter closes w, turning a driver panic into an error.
func closeBlobWriter(w *blob.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pq.CheckLibraryPanic(r)
			err = fmt.Errorf("blob driver panicked closing a writer: %v", r)
		}
	}()
	return w.Close()
}

// uploadBytes writes data at key in one request (IfNotExist when
// ifNotExist), turning a driver panic into an error.
func uploadBytes(ctx context.Context, b *blob.Bucket, key string, data []byte, contentType string, ifNotExist bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pq.CheckLibraryPanic(r)
			err = fmt.Errorf("blob driver panicked writing %s: %v", key, r)
		}
	}()
	return b.Upload(ctx, key, bytes.NewReader(data), &blob.WriterOptions{ContentType: contentType, IfNotExist: ifNotExist})
}

// writeLastCheckpoint replaces _last_checkpoint with lc unless it names a
// newer checkpoint already. It reports whether it wrote.
func writeLastCheckpoint(ctx context.Context, t *delta.Table, lc *logpath.LastCheckpointOut) (bool, error) {
	return writeLastCheckpointIf(ctx, t, lc, func(cur int64) bool { return cur <= lc.Version })
}

// writeLastCheckpointIf replaces _last_checkpoint with lc when replace
// accepts the version it names when read just before (-1: missing or
// corrupt). It reports whether it wrote.
func writeLastCheckpointIf(ctx context.Context, t *delta.Table, lc *logpath.LastCheckpointOut, replace func(cur int64) bool) (bool, error) {
	cur, err := delta.LastCheckpointVersion(ctx, t)
	if err != nil {
		return false, err
	}
	if !replace(cur) {
		return false, nil
	}
	data, err := lc.Encode()
	if err != nil {
		return false, fmt.Errorf("table %s: encode %s: %w", t.URL, logpath.LastCheckpointKey, err)
	}
	if err := uploadBytes(ctx, t.Bucket, logpath.LastCheckpointKey, data, "application/json", false); err != nil {
		return false, fmt.Errorf("table %s: write %s: %w", t.URL, logpath.LastCheckpointKey, err)
	}
	return true, nil
}

// checkpointProperties returns the snapshot's properties once those a
// checkpoint depends on are known to be valid.
func checkpointProperties(snap *delta.Snapshot) (*deltaprops.Properties, error) {
	props := snap.Properties()
	return props, props.Check(deltaprops.PropCheckpointPolicy, deltaprops.PropCheckpointWriteStatsAsJSON, deltaprops.PropCheckpointWriteStatsAsStruct,
		deltaprops.PropDeletedFileRetentionDuration, deltaprops.PropSetTransactionRetentionDuration)
}

// unboundedStringColumns turns off the parquet min/max statistics (in page
// headers, column chunks and column indexes) of the checkpoint's byte-array
// columns outside stats_parsed and partitionValues_parsed: add.stats,
// paths, tags, metaData.schemaString and the like are compared by no
// reader, and parquet-go would copy whole values into every page header
// and the footer (a 200 MB stats string made a 400 MB footer). The
// parsed bounds keep theirs, short since cutBound.
func unboundedStringColumns(schema *parquet.Schema) []parquet.WriterOption {
	var opts []parquet.WriterOption
	for _, path := range schema.Columns() {
		leaf, ok := schema.Lookup(path...)
		if !ok || leaf.Node.Type().Kind() != parquet.ByteArray {
			continue
		}
		if len(path) > 1 && path[0] == "add" && (path[1] == "stats_parsed" || path[1] == "partitionValues_parsed") {
			continue
		}
		opts = append(opts, parquet.SkipPageBounds(path...), parquet.SkipPageStatistics(path...))
	}
	return opts
}
