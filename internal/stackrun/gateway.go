package stackrun

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/stratalog/strata/internal/lambdarun"
)

// Gateway is one container of an ECS task definition in the template (the Kafka
// gateway) running here as a process: the binary of its image asset in the cloud
// assembly, the entrypoint of the asset's Dockerfile and the container's command, the
// container's environment resolved, and the task role's statements checked by its own
// proxy, as a function's are.
type Gateway struct {
	// LogicalID is the task definition's; Container the container's name.
	LogicalID, Container string
	// Addr is where the process listens (the harness's one override of the command:
	// --listen and --advertise name a free loopback port instead of the load
	// balancer's).
	Addr string
	// Env is the container's environment from the template, references resolved.
	Env map[string]string
	// Args are the process's arguments after the binary.
	Args []string
	// Statements are the task role's; Proxy checks every AWS request against them.
	Statements []Statement
	Proxy      *Proxy
	logs       *lambdarun.LockedBuffer
}

// Logs returns what the process wrote (its EMF lines included).
func (g *Gateway) Logs() string { return g.logs.String() }

// containerDef is the part of a container definition the harness runs.
type containerDef struct {
	Name        string
	Image       any
	Command     []any
	EntryPoint  []any
	Environment []struct {
		Name  string
		Value any
	}
}

// startGateways starts every container of the template's ECS task definitions.
func (s *Stack) startGateways(ctx context.Context, out string) error {
	for _, id := range s.Template.OfType("AWS::ECS::TaskDefinition") {
		p := s.Template.Resources[id].Properties
		raw, _ := json.Marshal(p["ContainerDefinitions"])
		var defs []containerDef
		if err := json.Unmarshal(raw, &defs); err != nil {
			return fmt.Errorf("stackrun: task definition %s: %w", id, err)
		}
		role, ok := idFromGetAtt(p["TaskRoleArn"])
		if !ok {
			return fmt.Errorf("stackrun: task definition %s: task role %v is not the template's", id, p["TaskRoleArn"])
		}
		stmts, err := s.Template.RoleStatements(role)
		if err != nil {
			return err
		}
		for _, d := range defs {
			g, err := s.startGateway(ctx, out, id, d, stmts)
			if err != nil {
				return err
			}
			s.Gateways[id+"/"+d.Name] = g
		}
	}
	return nil
}

func (s *Stack) startGateway(ctx context.Context, out, id string, d containerDef, stmts []Statement) (*Gateway, error) {
	g := &Gateway{LogicalID: id, Container: d.Name, Env: map[string]string{}, Statements: stmts, logs: &lambdarun.LockedBuffer{}}
	dir, err := imageAssetDir(out, d.Image)
	if err != nil {
		return nil, fmt.Errorf("stackrun: container %s/%s: %w", id, d.Name, err)
	}
	entry, err := dockerEntrypoint(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return nil, fmt.Errorf("stackrun: container %s/%s: %w", id, d.Name, err)
	}
	if len(d.EntryPoint) > 0 {
		entry = nil // the container's own entrypoint replaces the image's
	}
	for _, e := range d.EntryPoint {
		v, err := s.Template.Resolve(e)
		if err != nil {
			return nil, err
		}
		entry = append(entry, v)
	}
	if len(entry) == 0 {
		return nil, fmt.Errorf("stackrun: container %s/%s: no entrypoint", id, d.Name)
	}
	bin := filepath.Join(dir, filepath.Base(entry[0]))
	g.Addr = lambdarun.FreePort(s.t)
	args := append([]string(nil), entry[1:]...)
	for i := 0; i < len(d.Command); i++ {
		v := d.Command[i]
		if (v == "--listen" || v == "--advertise") && i+1 < len(d.Command) {
			args = append(args, v.(string), g.Addr)
			i++
			continue
		}
		r, err := s.Template.Resolve(v)
		if err != nil {
			return nil, fmt.Errorf("stackrun: container %s/%s command: %w", id, d.Name, err)
		}
		args = append(args, r)
	}
	g.Args = args
	for _, e := range d.Environment {
		v, err := s.Template.Resolve(e.Value)
		if err != nil {
			return nil, fmt.Errorf("stackrun: container %s/%s environment %s: %w", id, d.Name, e.Name, err)
		}
		g.Env[e.Name] = v
	}
	g.Proxy = NewProxy(id+"/"+d.Name, stmts, s.emulator, s.lambda, s.reportDenial)
	env := []string{
		"AWS_REGION=" + Region,
		"AWS_DEFAULT_REGION=" + Region,
		"AWS_ACCESS_KEY_ID=AKIA" + strings.ToUpper(hex.EncodeToString([]byte(id))[:12]),
		"AWS_SECRET_ACCESS_KEY=stackrun-" + id,
		"AWS_SESSION_TOKEN=stackrun",
		"AWS_EC2_METADATA_DISABLED=true",
		"TZ=:UTC",
		"AWS_ENDPOINT_URL=" + g.Proxy.URL(),
	}
	keys := make([]string, 0, len(g.Env))
	for k := range g.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+g.Env[k])
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = env, s.t.TempDir()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = g.logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stackrun: container %s/%s: %w", id, d.Name, err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		announced := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = io.WriteString(g.logs, line+"\n")
			if !announced && strings.HasPrefix(line, "kafka listening on ") {
				announced = true
				close(ready)
			}
		}
	}()
	s.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		g.Proxy.Close()
		if s.t.Failed() {
			s.t.Logf("container %s/%s output:\n%s", id, d.Name, g.Logs())
		}
	})
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("stackrun: container %s/%s did not announce its listener:\n%s", id, d.Name, g.Logs())
	}
	return g, nil
}

// imageAssetDir is the directory of a container image asset in the cloud assembly: the
// template names the image by its tag, the asset's hash; the assembly holds the
// asset's build context as asset.<hash>.
func imageAssetDir(outDir string, image any) (string, error) {
	var ref string
	switch v := image.(type) {
	case string:
		ref = v
	case map[string]any:
		ref, _ = v["Fn::Sub"].(string)
	}
	i := strings.LastIndex(ref, ":")
	if ref == "" || i < 0 {
		return "", fmt.Errorf("image %v is not an image asset", image)
	}
	dir := filepath.Join(outDir, "asset."+ref[i+1:])
	if _, err := os.Stat(filepath.Join(dir, "Dockerfile")); err != nil {
		return "", fmt.Errorf("image asset %s: %w", ref[i+1:], err)
	}
	return dir, nil
}

// dockerEntrypoint is the exec-form ENTRYPOINT of a Dockerfile (its last).
func dockerEntrypoint(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entry []string
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ENTRYPOINT ")
		if !ok {
			continue
		}
		if err := json.Unmarshal([]byte(rest), &entry); err != nil {
			return nil, fmt.Errorf("%s: ENTRYPOINT %s: want the exec form: %w", path, rest, err)
		}
	}
	return entry, nil
}

// idFromGetAtt is the logical id of {"Fn::GetAtt": [id, "Arn"]}.
func idFromGetAtt(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	l, ok := m["Fn::GetAtt"].([]any)
	if !ok || len(l) != 2 || l[1] != "Arn" {
		return "", false
	}
	id, ok := l[0].(string)
	return id, ok
}
