// Command go_peer is the real Go client side of the streaming interop tests: it drives
// k8s.io/client-go's SPDY remotecommand executor and port-forwarder (the code kubectl and the
// apiserver use) against a vkubelet test server and prints one JSON result line.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
)

type result struct {
	OK           bool     `json:"ok"`
	Error        string   `json:"error,omitempty"`
	ExitCode     int      `json:"exitCode"`
	StdoutLen    int      `json:"stdoutLen"`
	StdoutSha256 string   `json:"stdoutSha256"`
	Stdout       string   `json:"stdout,omitempty"`
	Stderr       string   `json:"stderr"`
	Echoes       []string `json:"echoes,omitempty"`
}

// pattern returns n deterministic bytes that the test server can recompute.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz0123456789\n"[(i+int(seed))%37]
	}
	return b
}

type sizeQueue struct{ sizes []remotecommand.TerminalSize }

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	if len(q.sizes) == 0 {
		return nil
	}
	s := q.sizes[0]
	q.sizes = q.sizes[1:]
	return &s
}

func runExec(ctx context.Context, base string, stdinLen int, tty bool) result {
	query := "command=upper&input=1&output=1"
	if tty {
		query += "&tty=1"
	} else {
		query += "&error=1"
	}
	u, _ := url.Parse(base + "/exec/ns/pod/ctr?" + query)
	exe, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: base}, "POST", u)
	if err != nil {
		return result{Error: err.Error()}
	}
	var stdout, stderr bytes.Buffer
	opts := remotecommand.StreamOptions{Stdin: bytes.NewReader(pattern(stdinLen, 0)), Stdout: &stdout, Tty: tty}
	if tty {
		opts.TerminalSizeQueue = &sizeQueue{sizes: []remotecommand.TerminalSize{{Width: 80, Height: 24}, {Width: 120, Height: 40}}}
	} else {
		opts.Stderr = &stderr
	}
	err = exe.StreamWithContext(ctx, opts)
	sum := sha256.Sum256(stdout.Bytes())
	r := result{StdoutLen: stdout.Len(), StdoutSha256: hex.EncodeToString(sum[:]), Stderr: stderr.String()}
	if stdout.Len() <= 256 {
		r.Stdout = stdout.String()
	}
	var codeErr exec.CodeExitError
	switch {
	case err == nil:
		r.OK = true
	case errors.As(err, &codeErr):
		r.OK = true
		r.ExitCode = codeErr.Code
	default:
		r.Error = err.Error()
	}
	return r
}

func runPortForward(ctx context.Context, base string, conns int, size int) result {
	u, _ := url.Parse(base + "/portForward/ns/pod")
	rt, upgrader, err := spdy.RoundTripperFor(&rest.Config{Host: base})
	if err != nil {
		return result{Error: err.Error()}
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, os.Stderr)
	if err != nil {
		return result{Error: err.Error()}
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return result{Error: fmt.Sprintf("port-forward ended early: %v", err)}
	case <-ctx.Done():
		return result{Error: "timed out waiting for the port-forward listener"}
	}
	ports, _ := pf.GetPorts()
	echoes := make([]string, conns)
	errs := make([]error, conns)
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			echoes[i], errs[i] = echoOnce(fmt.Sprintf("127.0.0.1:%d", ports[0].Local), pattern(size, byte(i)))
		}(i)
	}
	wg.Wait()
	close(stop)
	<-done
	r := result{OK: true, Echoes: echoes}
	for _, e := range errs {
		if e != nil {
			r.OK, r.Error = false, e.Error()
		}
	}
	return r
}

// echoOnce sends payload, half-closes, and returns the sha256 of everything read back.
func echoOnce(addr string, payload []byte) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	go func() {
		_, _ = conn.Write(payload)
		_ = conn.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(conn)
	sum := sha256.Sum256(got)
	return fmt.Sprintf("%d:%s", len(got), hex.EncodeToString(sum[:])), err
}

func main() {
	mode := flag.String("mode", "exec", "exec, exec-tty or portforward")
	addr := flag.String("addr", "127.0.0.1:0", "test server address")
	stdinLen := flag.Int("stdin", 300*1024, "bytes of stdin (exec)")
	conns := flag.Int("conns", 4, "parallel connections (portforward)")
	size := flag.Int("size", 256*1024, "bytes per connection (portforward)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := "http://" + *addr
	var r result
	switch *mode {
	case "exec":
		r = runExec(ctx, base, *stdinLen, false)
	case "exec-tty":
		r = runExec(ctx, base, *stdinLen, true)
	case "portforward":
		r = runPortForward(ctx, base, *conns, *size)
	default:
		r = result{Error: "unknown mode " + strings.TrimSpace(*mode)}
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
	if !r.OK {
		os.Exit(1)
	}
}
