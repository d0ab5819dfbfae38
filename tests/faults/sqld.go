package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sqld is one libSQL server process on a loopback port with a data directory of its own,
// as tests/common/sqld.rs runs it: killed with SIGKILL and started again on the same port
// and data at will.
type sqld struct {
	bin, dir string
	port     int
	cmd      *exec.Cmd
	exited   chan struct{}
	starts   int
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startSqld(bin, dir string) (*sqld, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &sqld{bin: bin, dir: dir, port: port}
	return s, s.launch()
}

func (s *sqld) addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }
func (s *sqld) url() string  { return "http://" + s.addr() }

func (s *sqld) launch() error {
	log, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("sqld-%d.log", s.starts)))
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "--db-path", filepath.Join(s.dir, "data.sqld"),
		"--http-listen-addr", s.addr(), "--no-welcome")
	cmd.Stdout, cmd.Stderr = log, log
	// What the caller's environment says about sqld must not change the server under test.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SQLD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// The server dies with this process, however it ends (a timeout's SIGKILL included).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	s.starts++
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		cmd.Wait()
		log.Close()
		close(exited)
	}(s.exited)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("sqld exited at start (log: %s)", log.Name())
		default:
		}
		if healthy(s.port) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sqld did not answer /health within 30 s (log: %s)", log.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// takesWrites: a write answered within 10 s, or, for a server that is short of
// connections (HTTP 429), within 30 s.
func (s *sqld) takesWrites() bool {
	for until := time.Now().Add(30 * time.Second); time.Now().Before(until); time.Sleep(500 * time.Millisecond) {
		_, err := queryOnce(s.url(), 10*time.Second, "CREATE TABLE IF NOT EXISTS faults_probe (x)", "DELETE FROM faults_probe")
		if err == nil {
			return true
		}
		if !strings.Contains(err.Error(), "HTTP 429") {
			return false
		}
	}
	return false
}

// kill is SIGKILL: nothing flushed beyond what sqld already made durable.
func (s *sqld) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

func (s *sqld) restart() error {
	s.kill()
	return s.launch()
}

func healthy(port int) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// ---- SQL straight to the server (never through a proxy): setup and the final dump -------

// sqlValue is a Hrana value: {"type":"integer","value":"1"}, text, float, null, blob.
type sqlValue struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value,omitempty"`
}

func (v sqlValue) any() any {
	switch v.Type {
	case "integer":
		var s string
		if json.Unmarshal(v.Value, &s) == nil {
			n, _ := strconv.ParseInt(s, 10, 64)
			return n
		}
	case "float":
		var f float64
		_ = json.Unmarshal(v.Value, &f)
		return f
	case "text":
		var s string
		_ = json.Unmarshal(v.Value, &s)
		return s
	}
	return nil
}

// query runs statements in one Hrana v2 pipeline on a new stream and returns each one's
// rows. Each statement runs on its own (autocommit). A server short of connections (HTTP
// 429 while the streams of lost answers wait for their expiry) or restarting is asked
// again for up to 30 s.
func query(url string, stmts ...string) ([][][]any, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := queryOnce(url, 20*time.Second, stmts...)
		if err == nil || !errors.Is(err, errRetry) || time.Now().After(deadline) {
			return out, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

var errRetry = errors.New("worth asking again")

func queryOnce(url string, timeout time.Duration, stmts ...string) ([][][]any, error) {
	type stmt struct {
		SQL string `json:"sql"`
	}
	type req struct {
		Type string `json:"type"`
		Stmt *stmt  `json:"stmt,omitempty"`
	}
	var body struct {
		Requests []req `json:"requests"`
	}
	for _, s := range stmts {
		body.Requests = append(body.Requests, req{Type: "execute", Stmt: &stmt{SQL: s}})
	}
	body.Requests = append(body.Requests, req{Type: "close"})
	b, _ := json.Marshal(body)
	c := http.Client{Timeout: timeout}
	resp, err := c.Post(url+"/v2/pipeline", "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRetry, err)
	}
	defer resp.Body.Close()
	var answer struct {
		Results []struct {
			Type     string `json:"type"`
			Response struct {
				Result struct {
					Rows [][]sqlValue `json:"rows"`
				} `json:"result"`
			} `json:"response"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"results"`
	}
	if resp.StatusCode != 200 {
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		err := fmt.Errorf("sqld answered HTTP %d: %s", resp.StatusCode, buf.String())
		if resp.StatusCode == 429 || resp.StatusCode >= 500 {
			err = fmt.Errorf("%w: %w", errRetry, err)
		}
		return nil, err
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, err
	}
	var out [][][]any
	for i, s := range stmts {
		if i >= len(answer.Results) {
			return nil, fmt.Errorf("no result for %q", s)
		}
		r := answer.Results[i]
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s", s, r.Error.Message)
		}
		var rows [][]any
		for _, row := range r.Response.Result.Rows {
			vals := make([]any, len(row))
			for j, v := range row {
				vals[j] = v.any()
			}
			rows = append(rows, vals)
		}
		out = append(out, rows)
	}
	return out, nil
}
