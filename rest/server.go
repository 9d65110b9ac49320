package rest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Server is a Handler listening on rest.bind-address:rest.port (Flink's RestServerEndpoint).
// Start it with Start; Close it once done.
type Server struct {
	// Handler is the REST handler the server serves; Close closes it.
	Handler *Handler

	ln   net.Listener
	srv  *http.Server
	tls  bool
	done chan struct{} // closed once Serve returned
	err  error         // Serve's error other than http.ErrServerClosed; read after done

	closeOnce sync.Once
}

// Start builds a Handler from cfg (see New) and serves it on cfg.BindAddress:cfg.Port (defaults
// 127.0.0.1:8081; AnyPort picks a free port), over TLS when cfg.TLS is set. It returns once the
// socket listens: Addr is the bound address. Errors: New's, ErrInvalidConfig for a port out of
// range, and the listen error (an address in use, say).
func Start(cfg Config) (*Server, error) {
	if cfg.Port < AnyPort || cfg.Port > 65535 {
		return nil, fmt.Errorf("%w: rest.port (Config.Port) %d is not a port (0 means %d, AnyPort a free one)", ErrInvalidConfig, cfg.Port, DefaultPort)
	}
	h, err := New(cfg)
	if err != nil {
		return nil, err
	}
	host := cfg.BindAddress
	if host == "" {
		host = DefaultBindAddress
	}
	port := cfg.Port
	switch port {
	case 0:
		port = DefaultPort
	case AnyPort:
		port = 0
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("rest: listen on rest.bind-address %s, rest.port %d: %w", host, port, err)
	}
	s := &Server{Handler: h, ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil}}
	if cfg.TLS != nil {
		s.tls = true
		s.srv.TLSConfig = cfg.TLS.Clone()
		ln = tls.NewListener(ln, s.srv.TLSConfig)
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s, nil
}

// Addr is the address the server listens on ("127.0.0.1:8081").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the server's base URL: "http://<Addr>" or "https://<Addr>".
func (s *Server) URL() string {
	if s.tls {
		return "https://" + s.Addr()
	}
	return "http://" + s.Addr()
}

// Close stops listening, waits up to 5 s for requests in flight to end (then closes their
// connections, which cancels their contexts), waits for the serving goroutine, then closes the Handler (which waits for its
// asynchronous operations). It returns the serving error, if serving failed otherwise than by
// Close. Safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := s.srv.Shutdown(ctx); serr != nil {
			_ = s.srv.Close()
		}
		<-s.done
		err = errors.Join(s.err, s.Handler.Close())
	})
	return err
}
