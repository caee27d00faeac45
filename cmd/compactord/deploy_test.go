package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/compactord/compactord/delta"
	"github.com/compactord/compactord/policies"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// Docker does not run here; these tests keep the Dockerfile and
// docker-compose.yml consistent with the binary and the examples.

func TestTheDockerfileCommandIsAValidRunCommandLine(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CMD (\[.*\])$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Dockerfile has no exec-form CMD")
	}
	var args []string
	if err := json.Unmarshal(m[1], &args); err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("CMD = %v", args)
	}
	o, err := parseDaemonFlags(commandNamed("run").flags(context.Background(), io.Discard), args[1:])
	if err != nil {
		t.Fatalf("CMD %v: %v", args, err)
	}
	if o.PolicyDir != "/etc/compactord/policies" || o.HTTP != "0.0.0.0:9464" {
		t.Fatalf("options = %+v", o)
	}
	if !strings.Contains(string(b), "./cmd/compactord") {
		t.Fatal("Dockerfile does not build ./cmd/compactord")
	}
}

func TestComposeMountsValidPoliciesWhereTheImageReadsThem(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "./examples/compose/policies:/etc/compactord/policies:ro") {
		t.Fatal("compose does not mount examples/compose/policies at /etc/compactord/policies")
	}
	set, err := policies.LoadDir("../../examples/compose/policies")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range set.Tables {
		if !strings.Contains(p.URL, "endpoint=http://s3:7070") {
			t.Errorf("table %s does not use the compose S3 service: %s", p.Name, p.URL)
		}
		if strings.Contains(p.URL, "log_store=dynamodb") &&
			(!strings.Contains(p.URL, "dynamodb_endpoint=http://dynamodb:8000") || !strings.Contains(p.URL, "dynamodb_table=delta_log") ||
				!strings.Contains(string(b), "dynamodb:8000 dynamodb create-table --table-name delta_log")) {
			t.Errorf("table %s does not use the compose DynamoDB service and the table it creates: %s", p.Name, p.URL)
		}
		// Every URL opens (no I/O: the drivers connect on first use).
		tbl, err := delta.OpenTable(context.Background(), p.URL)
		if err != nil {
			t.Errorf("table %s: %v", p.Name, err)
			continue
		}
		_ = tbl.Close()
	}
	if set.Daemon.HTTP != "0.0.0.0:9464" || !strings.Contains(string(b), `"9464:9464"`) {
		t.Errorf("daemon http %q is not the published port", set.Daemon.HTTP)
	}
}

// The Kubernetes Deployment's command line is a valid `compactord run`
// whose replica name is the pod's own (fanout/kubernetes decodes every
// manifest strictly; this checks the flags against the binary's).
func TestTheKubernetesDeploymentRunsTheDaemonWithThePodAsReplica(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kubernetes/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	// The kubelet expands $(VAR) from the container's environment; the
	// downward API gives POD_NAME the pod's name.
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			vars[e.Name] = "compactord-6f7c9d-x2k4q"
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		}
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := vars[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
	}
	if len(args) == 0 || args[0] != "run" || len(c.Command) != 0 {
		t.Fatalf("command %v args %v: want the image's entrypoint with run", c.Command, args)
	}
	o, err := parseDaemonFlags(commandNamed("run").flags(context.Background(), io.Discard), args[1:])
	if err != nil {
		t.Fatalf("args %v: %v", args, err)
	}
	if o.Replica != "compactord-6f7c9d-x2k4q" || o.PolicyDir != "/etc/compactord/policies" || o.HTTP != "0.0.0.0:9464" || o.LogFormat != "json" {
		t.Fatalf("options = %+v", o)
	}
}
