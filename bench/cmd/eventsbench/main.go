// Command eventsbench measures, for bench/events.sh, the object-store
// requests and the commit-to-poll latency of one compactord daemon
// watching many small Delta tables on versitygw, with and without change
// events: versitygw publishes its bucket events to RabbitMQ, the daemon
// (the real binary) reads its tables through a counting reverse proxy in
// front of versitygw, and this program writes a share of the tables each
// minute through the S3 API as another engine would (a parquet file, then
// the next commit). See bench/README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob"
)

const (
	bucketName = "bench"
	queueName  = "compactord-bench"
	accessKey  = "compactord-bench"
	secretKey  = "compactord-bench-secret"
)

type config struct {
	versitygw, compactord, rabbit, work, out string
	tables, commits, parallel                int
	window, poll, reconcile                  time.Duration
	writePct                                 float64
	runs                                     []string
}

func main() {
	var c config
	var runs string
	flag.StringVar(&c.versitygw, "versitygw", "", "versitygw binary")
	flag.StringVar(&c.compactord, "compactord", "", "compactord binary")
	flag.StringVar(&c.rabbit, "rabbit", "", "RabbitMQ URL, amqp://user:pass@host:port/")
	flag.StringVar(&c.work, "work", "bench/out/events", "work directory (versitygw's data, policies, logs)")
	flag.StringVar(&c.out, "out", "", "file to append one JSON line per run to")
	flag.IntVar(&c.tables, "tables", 1000, "tables to watch")
	flag.IntVar(&c.commits, "commits", 3, "commits of each table when it is created")
	flag.IntVar(&c.parallel, "parallel", 8, "parallel writers creating the tables")
	flag.DurationVar(&c.window, "window", 5*time.Minute, "steady-state window (rounded up to whole poll intervals of the run)")
	flag.DurationVar(&c.poll, "poll", time.Minute, "poll interval of the polling run")
	flag.DurationVar(&c.reconcile, "reconcile", 10*time.Minute, "reconcile interval of the events run")
	flag.Float64Var(&c.writePct, "write-pct", 1, "percent of the tables written per minute")
	flag.StringVar(&runs, "runs", "poll,events", "runs, in order: poll, events")
	flag.Parse()
	c.runs = strings.Split(runs, ",")
	if c.versitygw == "" || c.compactord == "" || c.rabbit == "" {
		fmt.Fprintln(os.Stderr, "eventsbench: -versitygw, -compactord and -rabbit are required")
		os.Exit(2)
	}
	ctx := context.Background()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "eventsbench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s eventsbench: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitPort(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %v: %w", addr, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dialRabbit connects, waiting for a broker that is still booting.
func dialRabbit(u string) (*amqp.Connection, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		conn, err := amqp.Dial(u)
		if err == nil {
			return conn, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("RabbitMQ did not accept a connection within 2 minutes: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func run(ctx context.Context, c config) error {
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey, "AWS_REGION": "us-east-1", "RABBIT_SERVER_URL": c.rabbit} {
		os.Setenv(k, v)
	}
	conn, err := dialRabbit(c.rabbit)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbitmq channel: %w", err)
	}
	if _, err := ch.QueueDeclare(queueName, false, false, false, false, nil); err != nil {
		return fmt.Errorf("declare queue %s: %w", queueName, err)
	}

	vgw, stopVgw, err := startVersitygw(c)
	if err != nil {
		return err
	}
	defer stopVgw()
	b, err := blob.OpenBucket(ctx, "s3://"+bucketName+"?"+s3Query(vgw))
	if err != nil {
		return fmt.Errorf("open bucket: %w", err)
	}
	defer b.Close()
	if err := ensureBucket(ctx, b, bucketName); err != nil {
		return err
	}
	w := writer{b: b}
	t0 := time.Now()
	next, err := w.createAll(ctx, c.tables, c.commits, c.parallel)
	if err != nil {
		return err
	}
	logf("%d tables ready in %v", c.tables, time.Since(t0).Round(time.Millisecond))

	target, _ := url.Parse(vgw)
	cnt := newCounter(target, bucketName)
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: cnt, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(pl) }()
	defer srv.Close()
	proxyURL := "http://" + pl.Addr().String()

	var sums []summary
	for _, mode := range c.runs {
		if mode != "poll" && mode != "events" {
			return fmt.Errorf("run %q: want poll or events", mode)
		}
		if _, err := ch.QueuePurge(queueName, false); err != nil {
			return fmt.Errorf("purge queue: %w", err)
		}
		s, err := oneRun(ctx, c, mode, proxyURL, cnt, w, next)
		if err != nil {
			return fmt.Errorf("run %s: %w", mode, err)
		}
		sums = append(sums, s)
		if c.out != "" {
			line, _ := json.Marshal(s)
			f, err := os.OpenFile(c.out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			fmt.Fprintln(f, string(line))
			f.Close()
		}
	}
	printTable(sums)
	return nil
}

func startVersitygw(c config) (string, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	root, err := filepath.Abs(filepath.Join(c.work, "s3"))
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", nil, err
	}
	logFile, err := os.Create(filepath.Join(c.work, "versitygw.log"))
	if err != nil {
		return "", nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(c.versitygw, "--port", addr, "--event-rabbitmq-url", c.rabbit,
		"--event-rabbitmq-routing-key", queueName, "posix", root)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+accessKey, "ROOT_SECRET_KEY="+secretKey)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return "", nil, fmt.Errorf("start versitygw: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
	}
	if err := waitPort(addr, 30*time.Second); err != nil {
		stop()
		return "", nil, fmt.Errorf("versitygw: %w", err)
	}
	return "http://" + addr, stop, nil
}

// summary is one run's result (one JSON line).
type summary struct {
	Run            string             `json:"run"`
	Tables         int                `json:"tables"`
	Interval       string             `json:"interval"`
	WindowMinutes  float64            `json:"window_minutes"`
	Writes         int                `json:"writes"`
	TablesWritten  int                `json:"tables_written"`
	PerMin         map[string]float64 `json:"requests_per_min"`
	IdlePerMin     map[string]float64 `json:"idle_requests_per_min"`
	IdleFleetMin   float64            `json:"idle_requests_per_min_all_tables"`
	Goal           float64            `json:"idle_goal_per_min,omitempty"`
	Minutes        []counts           `json:"per_minute"`
	IdleMinutes    []counts           `json:"idle_per_minute"`
	Outside        counts             `json:"outside_tables"`
	P50s           float64            `json:"commit_to_poll_p50_s"`
	P99s           float64            `json:"commit_to_poll_p99_s"`
	MaxS           float64            `json:"commit_to_poll_max_s"`
	Missed         int                `json:"commits_not_noticed"`
	RSSMiB         float64            `json:"rss_mib"`
	HWMMiB         float64            `json:"rss_peak_mib"`
	HeapMiB        float64            `json:"heap_inuse_mib,omitempty"`
	Polls          int64              `json:"daemon_polls"`
	RequestedPolls int64              `json:"daemon_requested_polls"`
	Events         json.RawMessage    `json:"events,omitempty"`
	Load           string             `json:"loadavg"`
	StartupSeconds float64            `json:"startup_seconds"`
}

// status is the part of /status the bench reads.
type status struct {
	Tables []tableStatus   `json:"tables"`
	Events json.RawMessage `json:"events"`
}

// tableStatus is the part of a table's /status the bench reads.
type tableStatus struct {
	Name     string `json:"name"`
	Last     int64  `json:"last_seen_version"`
	Counters struct {
		Polls          int64 `json:"polls"`
		RequestedPolls int64 `json:"requested_polls"`
	} `json:"counters"`
}

func getStatus(base string) (*status, error) {
	resp, err := http.Get(base + "/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/status: %s", resp.Status)
	}
	var s status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("/status: %w", err)
	}
	return &s, nil
}

func writePolicies(dir, mode, httpAddr, proxyURL string, c config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d := fmt.Sprintf("daemon {\n  http = %q\n  poll = %q\n", httpAddr, c.poll.String())
	if mode == "events" {
		d += fmt.Sprintf("  events {\n    url = %q\n    reconcile_interval = %q\n  }\n", "rabbit://"+queueName, c.reconcile.String())
	}
	d += "}\n"
	if err := os.WriteFile(filepath.Join(dir, "daemon.hcl"), []byte(d), 0o644); err != nil {
		return err
	}
	var t strings.Builder
	for i := range c.tables {
		u := "s3://" + bucketName + "/" + lakePrefix + tableName(i) + "?" + s3Query(proxyURL)
		// Triggers off: the window measures watching, not compacting.
		fmt.Fprintf(&t, "table %q {\n  url = %q\n  triggers {\n    small_files = 0\n    deleted_rows_ratio = 0\n    unclustered_bytes = 0\n    max_time_since_last_run = \"0s\"\n  }\n}\n", tableName(i), u)
	}
	return os.WriteFile(filepath.Join(dir, "tables.hcl"), []byte(t.String()), 0o644)
}

// procStatus reads VmRSS and VmHWM (MiB) of pid.
func procStatus(pid int) (rss, hwm float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			hwm = kb / 1024
		}
	}
	return rss, hwm
}

// heapInuse reads go_memstats_heap_inuse_bytes from /metrics (0 when
// absent).
func heapInuse(base string) float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	for _, line := range strings.Split(sb.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f / (1 << 20)
		}
	}
	return 0
}

type commitRec struct {
	key  string
	done time.Time
}

func oneRun(ctx context.Context, c config, mode, proxyURL string, cnt *counter, w writer, next []int64) (summary, error) {
	interval := c.poll
	if mode == "events" {
		interval = c.reconcile
	}
	dir, err := filepath.Abs(filepath.Join(c.work, "run-"+mode))
	if err != nil {
		return summary{}, err
	}
	port, err := freePort()
	if err != nil {
		return summary{}, err
	}
	httpAddr := "127.0.0.1:" + strconv.Itoa(port)
	if err := writePolicies(filepath.Join(dir, "policies"), mode, httpAddr, proxyURL, c); err != nil {
		return summary{}, err
	}
	logFile, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		return summary{}, err
	}
	defer logFile.Close()
	t0 := time.Now()
	cmd := exec.Command(c.compactord, "run", "--policies", filepath.Join(dir, "policies"), "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return summary{}, fmt.Errorf("start compactord: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	defer stop()
	base := "http://" + httpAddr
	if err := waitPort(httpAddr, time.Minute); err != nil {
		return summary{}, fmt.Errorf("compactord: %w (log %s)", err, logFile.Name())
	}
	logf("run %s: daemon pid %d watching %d tables, poll every %v", mode, cmd.Process.Pid, c.tables, interval)
	// Every table polled once: the start's full loads are done.
	for {
		st, err := getStatus(base)
		if err == nil && len(st.Tables) == c.tables && !slices.ContainsFunc(st.Tables, func(t tableStatus) bool { return t.Last < 0 }) {
			break
		}
		select {
		case err := <-exited:
			return summary{}, fmt.Errorf("compactord exited: %v (log %s)", err, logFile.Name())
		default:
		}
		if time.Since(t0) > 10*time.Minute {
			return summary{}, fmt.Errorf("not every table was polled within 10 minutes")
		}
		time.Sleep(500 * time.Millisecond)
	}
	startup := time.Since(t0)
	// The window starts between two rounds of periodic polls and lasts
	// whole intervals, so that it holds every table's periodic poll the
	// same number of times.
	// The periodic rounds come every interval after the start's (about
	// t0): the window starts after the start's polls, at least 10 s
	// before the next round, else half an interval past a later one.
	start := t0.Add(min(interval/2, 30*time.Second))
	if soon := time.Now().Add(2 * time.Second); start.Before(soon) {
		start = soon
	}
	if start.After(t0.Add(interval - 10*time.Second)) {
		start = t0.Add(interval / 2)
		for start.Before(time.Now().Add(2 * time.Second)) {
			start = start.Add(interval)
		}
	}
	n := math.Ceil(float64(c.window) / float64(interval))
	length := time.Duration(n) * interval
	logf("run %s: all tables polled after %v; window %v from %s", mode, startup.Round(time.Millisecond), length, start.UTC().Format("15:04:05"))
	time.Sleep(time.Until(start))
	cnt.measure(start, length)

	perMinute := max(1, int(math.Round(float64(c.tables)*c.writePct/100)))
	writes := int(math.Round(float64(perMinute) * length.Minutes()))
	gap := time.Minute / time.Duration(perMinute)
	rng := rand.New(rand.NewPCG(uint64(len(mode)), 34))
	order := rng.Perm(c.tables)
	var commits []commitRec
	for j := range writes {
		at := start.Add(time.Duration(j)*gap + gap/2)
		time.Sleep(time.Until(at))
		i := order[j%len(order)]
		table := tableName(i)
		cnt.wrote(table, time.Now())
		add, err := w.dataFile(ctx, table, next[i]*10, 10)
		if err != nil {
			return summary{}, err
		}
		if err := w.commit(ctx, table, next[i], []string{fmt.Sprintf(`{"commitInfo":{"timestamp":%d,"operation":"WRITE","engineInfo":"eventsbench"}}`, time.Now().UnixMilli()), add}); err != nil {
			return summary{}, err
		}
		commits = append(commits, commitRec{key: lakePrefix + table + "/" + fmt.Sprintf("_delta_log/%020d.json", next[i]), done: time.Now()})
		next[i]++
	}
	time.Sleep(time.Until(start.Add(length)))
	load, _ := os.ReadFile("/proc/loadavg")
	rss, hwm := procStatus(cmd.Process.Pid)
	heap := heapInuse(base)
	res := cnt.result(tableNames(c.tables))
	st, err := getStatus(base)
	if err != nil {
		return summary{}, err
	}
	// The last commits may still be on their way to a poll.
	grace := min(interval, 2*time.Minute) + 30*time.Second
	deadline := time.Now().Add(grace)
	var lat []float64
	missed := 0
	for _, cr := range commits {
		for {
			if seen, ok := cnt.firstSeen(cr.key); ok {
				lat = append(lat, max(0, seen.Sub(cr.done).Seconds()))
				break
			}
			if time.Now().After(deadline) {
				missed++
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	stop()
	s := summary{Run: mode, Tables: c.tables, Interval: interval.String(), WindowMinutes: length.Minutes(), Writes: writes,
		TablesWritten: res.written, Minutes: res.perMin, IdleMinutes: res.idleMin, Outside: res.outside,
		Missed: missed, RSSMiB: rss, HWMMiB: hwm, HeapMiB: heap, Events: st.Events, Load: strings.TrimSpace(string(load)),
		StartupSeconds: startup.Seconds()}
	var tot, idle counts
	for _, m := range res.perMin {
		tot.add(m)
	}
	for _, m := range res.idleMin {
		idle.add(m)
	}
	s.PerMin, s.IdlePerMin = map[string]float64{}, map[string]float64{}
	for i, name := range classNames {
		s.PerMin[name] = float64(tot[i]) / length.Minutes()
		s.IdlePerMin[name] = float64(idle[i]) / length.Minutes()
	}
	s.PerMin["total"] = float64(tot.total()) / length.Minutes()
	s.IdlePerMin["total"] = float64(idle.total()) / length.Minutes()
	if res.idleTableMinutes > 0 {
		s.IdleFleetMin = float64(idle.total()) / res.idleTableMinutes * float64(c.tables)
	}
	if mode == "events" {
		s.Goal = float64(c.tables) / c.reconcile.Minutes()
	}
	for _, t := range st.Tables {
		s.Polls += t.Counters.Polls
		s.RequestedPolls += t.Counters.RequestedPolls
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.P50s = lat[int(float64(len(lat)-1)*0.5)]
		s.P99s = lat[int(float64(len(lat)-1)*0.99)]
		s.MaxS = lat[len(lat)-1]
	}
	logf("run %s: done", mode)
	return s, nil
}

func tableNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = tableName(i)
	}
	return names
}

func printTable(ss []summary) {
	fmt.Println("| run | tables | poll every | window min | writes | req/min total (GET/HEAD/LIST/PUT) | idle req/min (GET/HEAD/LIST/PUT) | idle req/min, all tables idle | goal | commit→poll p50 s | p99 s | max s | missed | RSS MiB | heap MiB | load |")
	fmt.Println("|---|---:|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, s := range ss {
		goal := "—"
		if s.Goal > 0 {
			goal = fmt.Sprintf("%.0f", s.Goal)
		}
		fmt.Printf("| %s | %d | %s | %.1f | %d | %.1f (%.1f/%.1f/%.1f/%.1f) | %.1f (%.1f/%.1f/%.1f/%.1f) | %.1f | %s | %.3f | %.3f | %.3f | %d | %.0f | %.0f | %s |\n",
			s.Run, s.Tables, s.Interval, s.WindowMinutes, s.Writes,
			s.PerMin["total"], s.PerMin["GET"], s.PerMin["HEAD"], s.PerMin["LIST"], s.PerMin["PUT"],
			s.IdlePerMin["total"], s.IdlePerMin["GET"], s.IdlePerMin["HEAD"], s.IdlePerMin["LIST"], s.IdlePerMin["PUT"],
			s.IdleFleetMin, goal, s.P50s, s.P99s, s.MaxS, s.Missed, s.RSSMiB, s.HeapMiB, s.Load)
	}
}
