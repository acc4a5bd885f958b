package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionsPerPage bounds the cluster page's partition table.
const partitionsPerPage = 200

type clusterData struct {
	ClusterID        string
	Controller       int32
	Brokers          []brokerRow
	Topics           int
	Partitions       int
	UnderReplicated  int
	Offline          int
	Problems         []partitionRow // under-replicated or offline
	Rows             []partitionRow // this page of all partitions
	Page, Pages      int
	PrevPage, NextPg int
	AsOf             AsOf
}

type brokerRow struct {
	ID         int32
	Host       string
	Port       int32
	Rack       string
	Controller bool
	Leaders    int
	Replicas   int
}

type partitionRow struct {
	Topic           string
	Partition       int32
	Leader          int32
	Replicas, ISR   []int32
	Offline         []int32
	UnderReplicated bool
	NoLeader        bool
	Err             string
}

func rowOf(p kadm.PartitionDetail) partitionRow {
	r := partitionRow{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR, Offline: p.OfflineReplicas}
	r.UnderReplicated = len(p.ISR) < len(p.Replicas)
	r.NoLeader = p.Leader < 0
	if p.Err != nil {
		r.Err = p.Err.Error()
	}
	return r
}

// clusterMeta is the metadata of every topic as the pages use it,
// taken by one Metadata request and shared for Config.CacheFor
// (Console.meta).
type clusterMeta struct {
	Cluster         string
	Controller      int32
	Brokers         []brokerRow // by id, with their leaders and replicas
	Topics          kadm.TopicDetails
	Names           []string       // every topic, sorted
	Rows            []partitionRow // every partition, by topic and partition
	Problems        []partitionRow // under-replicated or offline
	UnderReplicated int
	Offline         int
}

// meta is the cluster's metadata at most Config.CacheFor old, and when
// it was taken.
func (c *Console) meta(ctx context.Context) (*clusterMeta, time.Time, error) {
	return c.metaCache.get(ctx, c.cfg.CacheFor, c.loadMeta)
}

// routingMeta is the metadata for the lag snapshot and for sending
// requests to the partitions' leaders: up to three sample intervals old
// (a topic created since gets its history from the next metadata; a
// request a stale leader refuses is sent again with metadata taken anew,
// see listOffsets). Only the pages that show the metadata want it as
// fresh as CacheFor.
func (c *Console) routingMeta(ctx context.Context) (*clusterMeta, time.Time, error) {
	maxAge := c.cfg.CacheFor
	if maxAge > 0 {
		maxAge = max(maxAge, 3*c.cfg.SampleInterval)
	}
	return c.metaCache.get(ctx, maxAge, c.loadMeta)
}

// loadMeta asks one broker for the metadata of every topic (a request
// of its own, not kgo's cached copy, so that "as of" is true). It goes
// straight to a broker the client knows: kgo takes a Metadata request
// given to Client.Request for its own and copies every partition into
// its cache; only before it knows any broker does it go that way.
func (c *Console) loadMeta(ctx context.Context) (*clusterMeta, error) {
	req := kmsg.NewPtrMetadataRequest()
	var (
		kr  kmsg.Response
		err = errors.New("no broker known")
	)
	if bs := c.kcl.DiscoveredBrokers(); len(bs) > 0 {
		kr, err = bs[int(c.metaLoads.Add(1))%len(bs)].Request(ctx, req)
	}
	if err != nil {
		kr, err = c.kcl.Request(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	resp := kr.(*kmsg.MetadataResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	m := &clusterMeta{Controller: resp.ControllerID, Topics: make(kadm.TopicDetails, len(resp.Topics))}
	if resp.ClusterID != nil {
		m.Cluster = *resp.ClusterID
	}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	m.Rows = make([]partitionRow, 0, n)
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); errors.Is(err, kerr.TopicAuthorizationFailed) {
			continue // not ours to see
		}
		td := kadm.TopicDetail{Topic: *t.Topic, ID: t.TopicID, IsInternal: t.IsInternal,
			Partitions: make(kadm.PartitionDetails, len(t.Partitions)), Err: kerr.ErrorForCode(t.ErrorCode)}
		for _, p := range t.Partitions {
			pd := kadm.PartitionDetail{Topic: td.Topic, Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, ISR: p.ISR, OfflineReplicas: p.OfflineReplicas, Err: kerr.ErrorForCode(p.ErrorCode)}
			td.Partitions[p.Partition] = pd
			row := rowOf(pd)
			m.Rows = append(m.Rows, row)
			leaders[p.Leader]++
			for _, id := range p.Replicas {
				replicas[id]++
			}
			if row.UnderReplicated {
				m.UnderReplicated++
			}
			if row.NoLeader {
				m.Offline++
			}
			if row.UnderReplicated || row.NoLeader {
				m.Problems = append(m.Problems, row)
			}
		}
		m.Topics[td.Topic] = td
		m.Names = append(m.Names, td.Topic)
	}
	sort.Strings(m.Names)
	byTopicPartition := func(s []partitionRow) {
		slices.SortFunc(s, func(a, b partitionRow) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return cmp.Compare(a.Partition, b.Partition)
		})
	}
	byTopicPartition(m.Rows)
	byTopicPartition(m.Problems)
	for _, b := range resp.Brokers {
		row := brokerRow{ID: b.NodeID, Host: b.Host, Port: b.Port, Controller: b.NodeID == resp.ControllerID,
			Leaders: leaders[b.NodeID], Replicas: replicas[b.NodeID]}
		if b.Rack != nil {
			row.Rack = *b.Rack
		}
		m.Brokers = append(m.Brokers, row)
	}
	slices.SortFunc(m.Brokers, func(a, b brokerRow) int { return cmp.Compare(a.ID, b.ID) })
	return m, nil
}

// clusterPage: brokers, controller, partitions with leader/replicas/ISR,
// under-replicated and offline counts.
func (c *Console) clusterPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	page := 1
	if s := r.URL.Query().Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			c.badRequest(w, r, "Cluster", "page "+strconv.Quote(s)+": want a page number from 1")
			return
		}
		page = n
	}
	m, at, err := c.meta(ctx)
	if err != nil {
		c.render(w, r, "cluster", "Cluster", nil, err)
		return
	}
	d := clusterData{ClusterID: m.Cluster, Controller: m.Controller, Topics: len(m.Names), Brokers: m.Brokers,
		UnderReplicated: m.UnderReplicated, Offline: m.Offline, Problems: m.Problems, Partitions: len(m.Rows),
		AsOf: asOf(at, c.cfg.CacheFor)}
	d.Pages = max(1, (len(m.Rows)+partitionsPerPage-1)/partitionsPerPage)
	page = min(page, d.Pages)
	d.Page = page
	lo := (page - 1) * partitionsPerPage
	d.Rows = m.Rows[lo:min(len(m.Rows), lo+partitionsPerPage)]
	if page > 1 {
		d.PrevPage = page - 1
	}
	if page < d.Pages {
		d.NextPg = page + 1
	}
	c.render(w, r, "cluster", "Cluster", d, nil)
}
