package runner

import (
	"strings"
	"testing"

	"github.com/compactord/compactord/compaction"
	"github.com/compactord/compactord/fanout"
	"github.com/compactord/compactord/policies"
	"github.com/compactord/compactord/tableop"
)

func TestAnExecutorBlockChoosesWhereCompactionJobsRun(t *testing.T) {
	f := WithExecutor(compaction.Factory(compaction.RunOptions{}), DefaultLaunchers())
	tests := []struct {
		name    string
		block   *policies.Executor
		want    func(compaction.Executor) bool
		wantErr string
	}{
		{name: "no block: in this process", want: func(e compaction.Executor) bool { return e == nil }},
		{name: "local", block: &policies.Executor{Kind: policies.ExecutorLocal, Parallelism: 2}, want: func(e compaction.Executor) bool { return e == nil }},
		{name: "process above a backlog", block: &policies.Executor{Kind: policies.ExecutorProcess, MinBacklogBytes: 1 << 30, Parallelism: 3, BackoffLimitPerIndex: 1, MaxUnits: 9},
			want: func(e compaction.Executor) bool {
				b, ok := e.(fanout.BySize)
				if !ok || b.MinBytes != 1<<30 {
					return false
				}
				r, ok := b.Remote.(*fanout.Executor)
				_, proc := r.Launcher.(*fanout.ProcessLauncher)
				return ok && proc && r.Parallelism == 3 && r.BackoffLimitPerIndex == 1 && r.MaxUnits == 9
			}},
		{name: "a kind this build has no launcher for", block: &policies.Executor{Kind: policies.ExecutorKubernetes, Parallelism: 2}, wantErr: `executor kind "kubernetes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := policies.DefaultPolicy()
			p.Executor = tt.block
			op, ok, err := f.New(p, tableop.Env{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("New = %v, %v", ok, err)
			}
			if ex := op.(*compaction.Op).Options.Executor; !tt.want(ex) {
				t.Fatalf("executor %#v", ex)
			}
		})
	}
}

// The executor block's executor goes to the operation named compaction
// wherever it stands in the order of the operations: in every rotation of
// DefaultOps, that factory's compaction gets the process executor and no
// other operation is wrapped (a wrapped one that is not a compaction would
// fail the run).
func TestTheExecutorGoesToTheOperationNamedCompactionWhateverTheOrder(t *testing.T) {
	p := policies.DefaultPolicy()
	p.Executor = &policies.Executor{Kind: policies.ExecutorProcess, Parallelism: 2}
	n := len(DefaultOps(compaction.RunOptions{}))
	for r := range n {
		ops := DefaultOps(compaction.RunOptions{})
		ops = append(ops[r:], ops[:r]...)
		names := make([]string, len(ops))
		for i, f := range ops {
			names[i] = f.Name
		}
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			found := false
			for _, f := range withExecutor(ops, DefaultLaunchers()) {
				op, ok, err := f.New(p, tableop.Env{})
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				if f.Name != compaction.Name || !ok {
					continue
				}
				found = true
				if _, remote := op.(*compaction.Op).Options.Executor.(fanout.BySize); !remote {
					t.Fatalf("compaction's executor %#v: want the executor block's", op.(*compaction.Op).Options.Executor)
				}
			}
			if !found {
				t.Fatal("no compaction among the operations")
			}
		})
	}
}
