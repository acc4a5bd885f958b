// Package console is weir's web console: server-rendered HTML pages
// (html/template) over the Kafka protocol and the schema registry's REST
// API, served under /console/ on an admin listener (broker/admin.Server:
// `weir broker` and `weir run`). It needs nothing else: no CDN, no
// external assets (CSS, a few lines of JS and the charts' SVG are
// embedded or generated), so it works offline, and since it reads the
// cluster only as a Kafka client (internal/kafkaclient, kadm) and the
// registry only through its REST API (internal/srclient), it works
// against any Kafka cluster and any Confluent-compatible registry.
//
// # Pages
//
//	/console/                     cluster: brokers, controller, partitions
//	                              with leader/replicas/ISR, under-replicated
//	                              and offline counts
//	/console/topics               topics; a topic: configs, partitions with
//	                              start/end offsets and sizes, throughput
//	                              chart; /console/topics/{t}/records, the
//	                              record browser (partition, offset,
//	                              timestamp or key; Avro through the
//	                              registry, JSON)
//	/console/groups               consumer groups (classic and KIP-848);
//	                              a group: members, assignment, lag per
//	                              partition, lag history
//	/console/schemas              registry subjects; a subject: versions,
//	                              compatibility, a diff of two versions
//	/console/pipelines            (weir run only) see Pipelines
//
// # Adding a page (the page pattern)
//
// A page is a handler method that loads its data and calls c.render with
// a template name, a title and the data; the template is
// templates/NAME.html and defines "content" (the layout, layout.html,
// supplies the head, nav landmark, main landmark and footer). Register
// the route and its nav entry in routes (console.go). Loading errors are
// shown on the page (render's err argument), bad input with status 400
// (c.badRequest). Mutating actions are POSTs registered with c.mutating,
// which refuses them (403) in read-only mode and when the request comes
// from another origin; templates hide them when .ReadOnly is true.
// Charts: Chart{...}.SVG() (chart.go) gives inline SVG.
//
// # History
//
// The sampler (sampler.go) records, every Config.SampleInterval, each
// topic's summed end offsets and each group's lag per topic into bounded
// rings (Config.History samples); the throughput and lag charts are drawn
// from them. Sampling runs while someone looks: it starts with a page view
// and stops after 30 intervals without one, so an unwatched console costs
// nothing.
//
// # Whole-cluster views
//
// The cluster page, the topics list and the groups list read every
// partition (10,000 on a large cluster): their data is shared between
// page views and viewers (shared.go) for Config.CacheFor (5 s), as is a
// group's page; the groups list's for the sample interval more, since
// its lag snapshot is the sampler's (one ListOffsets of every
// partition's end and one OffsetFetch per coordinator per interval,
// whoever looks). Requests to partition leaders and group coordinators
// go straight to them, routed by metadata up to three intervals old
// (asked again with fresh metadata when refused). Each such page says
// when its data was taken ("As of ..."). A change made through the
// console drops the shared views.
//
// # Consumer groups
//
// Groups of both protocols are shown alike (lag.go): classic groups
// (DescribeGroups; members, the leader's assignment) and groups of the
// consumer group protocol (KIP-848: ListGroups v5 types them,
// ConsumerGroupDescribe gives the epochs, the assignor and each member's
// subscription, assignment and target assignment).
//
// # Security
//
// The console adds no authentication of its own: the admin listener's
// (broker/httpsec: TLS, basic auth, read-only roles) covers every path
// under /console/. Read-only mode (Config.ReadOnly, `--console-read-only`)
// hides and refuses every mutating action.
package console
