package console

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
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
	md, err := c.adm.Metadata(ctx)
	if err != nil {
		c.render(w, r, "cluster", "Cluster", nil, err)
		return
	}
	d := clusterData{ClusterID: md.Cluster, Controller: md.Controller, Topics: len(md.Topics)}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	var all []partitionRow
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			row := rowOf(p)
			all = append(all, row)
			leaders[p.Leader]++
			for _, id := range p.Replicas {
				replicas[id]++
			}
			if row.UnderReplicated {
				d.UnderReplicated++
			}
			if row.NoLeader {
				d.Offline++
			}
			if row.UnderReplicated || row.NoLeader {
				d.Problems = append(d.Problems, row)
			}
		}
	}
	byTopicPartition := func(s []partitionRow) {
		sort.Slice(s, func(i, j int) bool {
			if s[i].Topic != s[j].Topic {
				return s[i].Topic < s[j].Topic
			}
			return s[i].Partition < s[j].Partition
		})
	}
	byTopicPartition(all)
	byTopicPartition(d.Problems)
	d.Partitions = len(all)
	d.Pages = max(1, (len(all)+partitionsPerPage-1)/partitionsPerPage)
	if page > d.Pages {
		page = d.Pages
	}
	d.Page = page
	lo := (page - 1) * partitionsPerPage
	d.Rows = all[lo:min(len(all), lo+partitionsPerPage)]
	if page > 1 {
		d.PrevPage = page - 1
	}
	if page < d.Pages {
		d.NextPg = page + 1
	}
	for _, b := range md.Brokers {
		row := brokerRow{ID: b.NodeID, Host: b.Host, Port: b.Port, Controller: b.NodeID == md.Controller,
			Leaders: leaders[b.NodeID], Replicas: replicas[b.NodeID]}
		if b.Rack != nil {
			row.Rack = *b.Rack
		}
		d.Brokers = append(d.Brokers, row)
	}
	sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i].ID < d.Brokers[j].ID })
	c.render(w, r, "cluster", "Cluster", d, nil)
}
