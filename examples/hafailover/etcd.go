package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/etcd"
)

// etcdPrefix is the key prefix of the example's cluster (Flink's high-availability.cluster-id).
const etcdPrefix = "/jobgraph/hafailover"

// etcdServer is the one-member etcd server the parent runs for -ha etcd.
type etcdServer struct {
	e        *embed.Etcd
	endpoint string
	dir      string
}

// startEtcd starts a one-member etcd server from go.etcd.io/etcd/server/v3/embed on 127.0.0.1
// with free ports, its data in a new temporary directory, its logger quiet.
func startEtcd() (*etcdServer, error) {
	dir, err := os.MkdirTemp("", "hafailover-etcd-")
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	// Port 0: the listeners get free ports; a single member never dials its peer URL.
	u := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{u}, []url.URL{u}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{u}, []url.URL{u}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting etcd: %w", err), os.RemoveAll(dir))
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, errors.Join(fmt.Errorf("etcd failed before it was ready: %w", err), os.RemoveAll(dir))
	case <-time.After(time.Minute):
		e.Close()
		return nil, errors.Join(errors.New("etcd was not ready within a minute"), os.RemoveAll(dir))
	}
	return &etcdServer{e: e, endpoint: e.Clients[0].Addr().String(), dir: dir}, nil
}

// close stops the server and removes its data.
func (s *etcdServer) close() {
	s.e.Close()
	_ = os.RemoveAll(s.dir)
}

// openEtcd opens this process's ha/etcd client.
func openEtcd(o options) (ha.Services, error) {
	return etcd.New(etcd.Options{Endpoints: strings.Split(o.etcdEndpoints, ","), Prefix: etcdPrefix, SessionTTL: o.etcdSessionTTL})
}
