// Package conformance drives the embedded cluster's `scylla-emulator` binary with clients
// nobody on this project wrote: ScyllaDB's gocql fork and scylla-cdc-go, unmodified, at the
// versions pinned in go.mod.
//
// Each test starts its own emulator process on a loopback range of its own (127.0.50.0/24
// and up: the Rust tests pick random ranges in 127.1-254.x.y, never 127.0.x.y) with a free
// port, talks to its stdin console (`add-node`, ...), and kills it when done. The emulator's
// statement log (every statement a client sent and every error answered) is written to
// $CONFORMANCE_LOGS/<test>.log when that variable is set.
package conformance

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// emulator is one running scylla-emulator process.
type emulator struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	// host and port of node 1.
	host string
	port int
}

// startEmulator starts `scylla-emulator` with node 1 at address (other nodes above it) and
// waits for its `ready` line. The process is killed when the test ends.
func startEmulator(t *testing.T, address string, nodes int, generationDelay time.Duration) *emulator {
	t.Helper()
	binary := os.Getenv("SCYLLA_EMULATOR")
	if binary == "" {
		t.Fatal("SCYLLA_EMULATOR is not set (the path of the scylla-emulator binary; conformance/go/run sets it)")
	}
	cmd := exec.Command(binary,
		"--nodes", strconv.Itoa(nodes),
		"--address", address,
		"--port", "0",
		"--generation-delay", fmt.Sprintf("%.3f", generationDelay.Seconds()),
	)
	if dir := os.Getenv("CONFORMANCE_LOGS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		log, err := os.Create(filepath.Join(dir, t.Name()+".log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close() })
		cmd.Stderr = log
		cmd.Env = append(os.Environ(), "RUST_LOG=warn,scylla_emulator::statements=debug")
	} else {
		cmd.Env = append(os.Environ(), "RUST_LOG=warn")
		cmd.Stderr = os.Stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", binary, err)
	}
	e := &emulator{cmd: cmd, stdin: stdin, lines: make(chan string, 1024)}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	go func() {
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 1<<20), 1<<20)
		for scanner.Scan() {
			e.lines <- scanner.Text()
		}
		close(e.lines)
	}()
	line := e.next(t, 60*time.Second)
	endpoint, ok := strings.CutPrefix(line, "ready ")
	if !ok {
		t.Fatalf("expected `ready <address>`, got %q", line)
	}
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}
	e.host = host
	e.port, err = strconv.Atoi(port)
	if err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}
	return e
}

// next returns the next stdout line, failing the test after timeout.
func (e *emulator) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case line, ok := <-e.lines:
		if !ok {
			t.Fatal("scylla-emulator exited")
		}
		return line
	case <-time.After(timeout):
		t.Fatalf("no answer from scylla-emulator within %v", timeout)
		return ""
	}
}

// command runs one console command and returns what follows `ok` on its reply line.
func (e *emulator) command(t *testing.T, line string) string {
	t.Helper()
	if _, err := fmt.Fprintln(e.stdin, line); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	for {
		reply := e.next(t, 60*time.Second)
		if reply == "ok" {
			return ""
		}
		if rest, ok := strings.CutPrefix(reply, "ok "); ok {
			return rest
		}
		if strings.HasPrefix(reply, "error:") {
			t.Fatalf("%s: %s", line, reply)
		}
		// Result rows of a `cql` command precede its reply.
	}
}

// nodeIP is the address of node i (1-based) of an emulator whose node 1 is at first.
func nodeIP(t *testing.T, first string, i int) string {
	t.Helper()
	ip := net.ParseIP(first).To4()
	if ip == nil {
		t.Fatalf("not an IPv4 address: %s", first)
	}
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+byte(i-1)).String()
}

// connect opens a gocql session with default options (token-aware host selection, the
// shard-aware port) against the emulator.
func connect(t *testing.T, e *emulator) *gocql.Session {
	t.Helper()
	cluster := gocql.NewCluster(e.host)
	cluster.Port = e.port
	cluster.Timeout = 20 * time.Second
	cluster.ConnectTimeout = 20 * time.Second
	session, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("gocql cannot connect to %s:%d: %v", e.host, e.port, err)
	}
	t.Cleanup(session.Close)
	return session
}

// run executes a statement that must succeed.
func run(t *testing.T, session *gocql.Session, stmt string, values ...interface{}) {
	t.Helper()
	if err := session.Query(stmt, values...).Exec(); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}
