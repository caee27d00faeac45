package events_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/delta/logpath"
	"github.com/compactord/compactord/delta/logstore"
	"github.com/compactord/compactord/events"
	"github.com/compactord/compactord/internal/daemon"
	"github.com/compactord/compactord/internal/testutil/stores"
	"github.com/compactord/compactord/internal/testutil/tabletest"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/runner"
	"github.com/compactord/compactord/scheduler"
)

// Env vars exported by scripts/test.d/rabbitmq.sh.
const (
	envRabbit    = "COMPACTORD_TEST_RABBITMQ_URL"
	envVersitygw = "COMPACTORD_TEST_VERSITYGW"
	// envCommits overrides the number of commits of the latency phase
	// (the 200; the default keeps the suite quick).
	envCommits = "COMPACTORD_TEST_EVENTS_COMMITS"
	// envRecord names a directory where the relay writes the first
	// notifications versitygw sends, as received (how
	// testdata/versitygw-*.json were recorded).
	envRecord = "COMPACTORD_TEST_EVENTS_RECORD"
)

const (
	accessKey = "compactord-events-test"
	secretKey = "compactord-events-test-secret"
	bucket    = "events"
)

// relay sits between versitygw's queue and the daemon's: it forwards each
// notification as the test's current mode says (drop some, duplicate and
// reorder them), so that the daemon sees a lossy, repetitive, out-of-order
// stream from a real broker.
type relay struct {
	ch       *amqp.Channel
	to       string
	mu       sync.Mutex
	mode     string // "pass", "drop", "dup-reorder"
	dropKeys map[string]bool
	held     *amqp.Delivery
	dropped  int
	sent     int
	record   string // envRecord's directory ("" when not recording)
	recorded int
}

// setMode switches the relay's mode and returns how many messages it has
// sent so far; a message held back for reordering is sent first.
func (r *relay) setMode(t *testing.T, mode string, drop map[string]bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held != nil {
		for range 3 {
			r.publish(t, r.held.Body)
		}
		r.held = nil
	}
	r.mode, r.dropKeys = mode, drop
	return r.sent
}

func (r *relay) publish(t *testing.T, body []byte) {
	if err := r.ch.PublishWithContext(context.Background(), "", r.to, false, false, amqp.Publishing{ContentType: "application/json", Body: body}); err != nil {
		t.Errorf("relay publish: %v", err)
	}
	r.sent++
}

func (r *relay) run(t *testing.T, in <-chan amqp.Delivery) {
	// A message held back for reordering goes out after the next one, or
	// alone when none follows soon (so that no commit waits for another).
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		var d amqp.Delivery
		var ok bool
		select {
		case d, ok = <-in:
			if !ok {
				return
			}
		case <-tick.C:
			r.mu.Lock()
			if r.held != nil {
				for range 3 {
					r.publish(t, r.held.Body)
				}
				r.held = nil
			}
			r.mu.Unlock()
			continue
		}
		r.mu.Lock()
		if r.record != "" && (r.recorded < 4 || r.recorded < 5 && bytes.Contains(d.Body, []byte("_delta_log/"))) {
			if err := os.WriteFile(filepath.Join(r.record, fmt.Sprintf("versitygw-%d.json", r.recorded)), d.Body, 0o644); err != nil {
				t.Errorf("record: %v", err)
			}
			r.recorded++
		}
		var keys []string
		if m, err := events.Decode(d.Body, nil); err == nil {
			for _, o := range m.Objects {
				keys = append(keys, o.Key)
			}
		}
		switch {
		case r.mode == "drop" && slices.ContainsFunc(keys, func(k string) bool { return r.dropKeys[k] }):
			r.dropped++
		case r.mode == "dup-reorder" && r.held == nil:
			held := d
			r.held = &held // sent after the next one
		case r.mode == "dup-reorder":
			for range 3 {
				r.publish(t, d.Body)
			}
			for range 3 {
				r.publish(t, r.held.Body)
			}
			r.held = nil
		default:
			r.publish(t, d.Body)
		}
		r.mu.Unlock()
	}
}

// dialRabbit connects to the broker, waiting up to a minute for it to boot
// (scripts/test.d/rabbitmq.sh starts it without waiting).
func dialRabbit(t *testing.T, u string) *amqp.Connection {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		conn, err := amqp.Dial(u)
		if err == nil {
			return conn
		}
		if time.Now().After(deadline) {
			msg := ""
			if lf := os.Getenv("COMPACTORD_TEST_RABBITMQ_LOG"); lf != "" {
				b, _ := os.ReadFile(lf)
				msg = "; its log:\n" + string(b[max(0, len(b)-4000):])
			}
			t.Fatalf("RabbitMQ at %s did not accept a connection within a minute: %v%s", u, err, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startVersitygw starts versitygw on a free loopback port, publishing its
// bucket events to RabbitMQ with routingKey, and returns its endpoint.
func startVersitygw(t *testing.T, bin, rabbitURL, routingKey string) string {
	t.Helper()
	port := freePort(t)
	root := filepath.Join(t.TempDir(), "s3")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--port", "127.0.0.1:"+strconv.Itoa(port),
		"--event-rabbitmq-url", rabbitURL, "--event-rabbitmq-routing-key", routingKey,
		"posix", root)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+accessKey, "ROOT_SECRET_KEY="+secretKey)
	logf, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		logf.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("versitygw did not listen within 30s: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

// startDaemon runs a daemon over the real runner backend with the policy
// files given, subscribed through rabbit://queue.
func startDaemon(t *testing.T, files map[string]string) *daemon.Daemon {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := tabletest.Logger(t)
	be := daemon.RunnerBackend(&runner.Backend{Tables: runner.NewTables(), Logger: log.Named("run"), EngineInfo: "compactord/events-test"})
	d, err := daemon.New(daemon.Options{PolicyDir: dir, HTTP: "off", Version: "test"}, log, func(policies.Daemon) daemon.Backend { return be })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, nil, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	return d
}

func statusOf(d *daemon.Daemon, name string) scheduler.TableStatus {
	for _, st := range d.Scheduler().Status() {
		if st.Name == name {
			return st
		}
	}
	return scheduler.TableStatus{}
}

// appender writes one small parquet file and commits it at the next
// version (after the daemon's own commits, when it compacts).
type appender struct {
	tbl  *delta.Table
	next int64 // 0: read the table
}

func (a *appender) append(t *testing.T) int64 {
	t.Helper()
	vs := a.appendN(t, 1)
	return vs[len(vs)-1]
}

// appendN writes n data files, then commits them one a version, so that
// the commits' events follow each other closely.
func (a *appender) appendN(t *testing.T, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	var lines []string
	for i := range n {
		add := tabletest.WriteDataFile(t, a.tbl, []int64{int64(i)})
		lines = append(lines, tabletest.AddLine(t, add))
	}
	var vs []int64
	for _, line := range lines {
		committed := false
		for range 10 {
			if a.next == 0 {
				a.next = tabletest.Latest(t, a.tbl).Version + 1
			}
			v := a.next
			body := fmt.Sprintf("{\"commitInfo\":{\"operation\":\"WRITE\",\"txnId\":\"append-%d\"}}\n%s\n", v, line)
			err := a.tbl.Log.PutIfAbsent(ctx, logpath.CommitKey(v), []byte(body))
			if err == nil {
				a.next++
				vs = append(vs, v)
				committed = true
				break
			}
			a.next = 0
			if !errors.Is(err, logstore.ErrCommitExists) {
				t.Fatalf("commit %d: %v", v, err)
			}
		}
		if !committed {
			t.Fatal("ten commits lost the race to the daemon's")
		}
	}
	return vs
}

// noticed waits until the daemon's poll has seen version v of table and
// returns how long that took; a functional bound (within), not a timing
// assertion: within is far past what events or the reconciling poll need.
func noticed(t *testing.T, d *daemon.Daemon, table string, v int64, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for statusOf(d, table).LastVersion < v {
		if time.Since(start) > within {
			t.Fatalf("table %s: version %d not noticed within %v (last seen %d)", table, v, within, statusOf(d, table).LastVersion)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

func runsOf(st scheduler.TableStatus) int64 {
	var n int64
	for _, c := range st.Counters.Runs {
		n += c
	}
	return n
}

// TestVersitygwEventsThroughRabbitMQMakeTheDaemonNoticeCommits is the end
// to end test of change events with real servers: versitygw publishes its
// bucket events to RabbitMQ, a relay of the test's forwards them (in the
// later phases dropping, duplicating and reordering some) to the queue the
// daemon reads through rabbit://.
func TestVersitygwEventsThroughRabbitMQMakeTheDaemonNoticeCommits(t *testing.T) {
	rabbitURL, vgw := os.Getenv(envRabbit), os.Getenv(envVersitygw)
	if rabbitURL == "" || vgw == "" {
		msg := fmt.Sprintf("%s and %s are not both set: scripts/test.sh sets them (scripts/test.d/emulators.sh installs versitygw, scripts/test.d/rabbitmq.sh installs and starts Debian's rabbitmq-server)", envRabbit, envVersitygw)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	commits := 100
	if s := os.Getenv(envCommits); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", envCommits, s)
		}
		commits = n
	}

	conn := dialRabbit(t, rabbitURL)
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	raw, daemonQueue := "versitygw-"+suffix, "compactord-"+suffix
	for _, q := range []string{raw, daemonQueue} {
		if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = ch.QueueDelete(q, false, false, false) })
	}
	pubCh, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	in, err := ch.Consume(raw, "", true, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl := &relay{ch: pubCh, to: daemonQueue, mode: "pass", record: os.Getenv(envRecord)}
	go rl.run(t, in)

	endpoint := startVersitygw(t, vgw, rabbitURL, raw)
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("RABBIT_SERVER_URL", rabbitURL)
	if err := stores.EnsureS3Bucket(context.Background(), endpoint, bucket); err != nil {
		t.Fatal(err)
	}
	url1 := stores.S3URL(endpoint, bucket, "lake/hot")
	url2 := stores.S3URL(endpoint, bucket, "lake/hot/dup") // nested: events of its keys are its own, not hot's
	tbl1 := tabletest.NewTable(t, url1, []int64{-1})
	tbl2 := tabletest.NewTable(t, url2, []int64{-1})
	quiet := "  triggers {\n    small_files = 0\n    deleted_rows_ratio = 0\n    unclustered_bytes = 0\n    max_time_since_last_run = \"0s\"\n  }\n"
	tables := map[string]string{
		"hot.hcl": fmt.Sprintf("table \"hot\" {\n  url = %q\n%s}\n", url1, quiet),
		"dup.hcl": fmt.Sprintf("table \"dup\" {\n  url = %q\n  triggers {\n    small_files = 2\n    deleted_rows_ratio = 0\n    unclustered_bytes = 0\n    max_time_since_last_run = \"0s\"\n  }\n}\n", url2),
	}
	policy := func(reconcile string) map[string]string {
		files := map[string]string{"daemon.hcl": fmt.Sprintf("daemon {\n  http = \"off\"\n  events {\n    url = \"rabbit://%s\"\n    reconcile_interval = %q\n  }\n}\n", daemonQueue, reconcile)}
		for k, v := range tables {
			files[k] = v
		}
		return files
	}

	hot := &appender{tbl: tbl1}
	dup := &appender{tbl: tbl2}

	t.Run("appends are noticed through events with the reconciling poll at 10 minutes", func(t *testing.T) {
		d := startDaemon(t, policy("10m"))
		noticed(t, d, "hot", 0, time.Minute) // the start's own poll
		var lat []time.Duration
		for range commits {
			v := hot.append(t)
			// Without events nothing reads the log for 10 minutes.
			lat = append(lat, noticed(t, d, "hot", v, time.Minute))
		}
		t.Logf("commit to poll over %d commits: p50 %v, p99 %v, max %v", len(lat), percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 1))
		st := statusOf(d, "hot")
		if st.Counters.RequestedPolls < int64(commits) {
			t.Fatalf("requested polls %d for %d commits", st.Counters.RequestedPolls, commits)
		}
		es := d.Events().Stats()
		t.Logf("events: %+v", es)
		if es.Polled < int64(commits) || es.Ignored == 0 {
			t.Fatalf("events %+v: want a poll per commit, the data files (and versitygw's s3:TestEvent) ignored", es)
		}
	})

	t.Run("with one event in ten dropped every commit is noticed by the reconciling poll", func(t *testing.T) {
		d := startDaemon(t, policy("2s"))
		noticed(t, d, "hot", tabletest.Latest(t, tbl1).Version, time.Minute)
		drop := map[string]bool{}
		n := max(commits/5, 20)
		next := tabletest.Latest(t, tbl1).Version + 1 // hot never runs: its versions are the appends'
		for i := range n {
			if i%10 == 5 {
				drop[fmt.Sprintf("lake/hot/_delta_log/%020d.json", next+int64(i))] = true
			}
		}
		rl.setMode(t, "drop", drop)
		defer rl.setMode(t, "pass", nil)
		var lat []time.Duration
		for range n {
			v := hot.append(t)
			// The bound is the reconciling interval's business: a dropped
			// event leaves only the reconciling poll to notice the commit.
			lat = append(lat, noticed(t, d, "hot", v, time.Minute))
		}
		rl.mu.Lock()
		dropped := rl.dropped
		rl.mu.Unlock()
		if dropped != len(drop) {
			t.Fatalf("the relay dropped %d events, want %d", dropped, len(drop))
		}
		t.Logf("commit to poll over %d commits with %d events dropped: p50 %v, p90 %v, max %v", n, dropped, percentile(lat, 0.5), percentile(lat, 0.9), percentile(lat, 1))
	})

	t.Run("duplicated and reordered events cause no extra run", func(t *testing.T) {
		d := startDaemon(t, policy("10m"))
		noticed(t, d, "dup", tabletest.Latest(t, tbl2).Version, time.Minute)
		before := runsOf(statusOf(d, "dup"))
		received := d.Events().Stats().Received
		sentBefore := rl.setMode(t, "dup-reorder", nil)
		const pairs = 10
		for range pairs {
			// Two data files, then two commits: the relay holds one event
			// and sends the next first (the second commit's before the
			// first's), each three times.
			vs := dup.appendN(t, 2)
			noticed(t, d, "dup", vs[1], time.Minute)
		}
		// Let every copy be handled before counting (the relay sends what
		// it still holds when it switches back).
		time.Sleep(100 * time.Millisecond) // the last events on their way to the relay; counted below either way
		sent := int64(rl.setMode(t, "pass", nil) - sentBefore)
		deadline := time.Now().Add(time.Minute)
		for {
			if es := d.Events().Stats(); es.Received-received >= sent && statusOf(d, "dup").State == scheduler.StateIdle {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("events not all handled: %+v", d.Events().Stats())
			}
			time.Sleep(10 * time.Millisecond)
		}
		st := statusOf(d, "dup")
		runs := runsOf(st) - before
		t.Logf("%d commits, %d messages relayed, %d polls asked for, %d runs", 2*pairs, sent, st.Counters.RequestedPolls, runs)
		// Each pair of commits is noticed by one poll (the second commit's
		// event comes first and the poll reads both), which may fire one
		// run; the copies and the late first event find nothing new. Half
		// a run more per pair leaves room for a pair whose events came
		// apart, and none for a run per copy (a trigger per event runs
		// about twice per pair, its copies coalescing).
		if runs > pairs+pairs/2 {
			t.Fatalf("%d runs for %d pairs of commits: duplicate or reordered events ran the table again", runs, pairs)
		}
		if runs == 0 {
			t.Fatalf("no run: the small_files trigger never fired, so the test shows nothing")
		}
	})
}
