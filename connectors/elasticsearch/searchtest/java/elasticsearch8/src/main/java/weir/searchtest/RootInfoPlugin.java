package weir.searchtest;

import java.util.Collection;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.io.stream.NamedWriteableRegistry;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * GET / and HEAD / for the node: in Elasticsearch 8 the root endpoint lives in
 * the rest-root module (MainRestPlugin), which is not published to Maven
 * Central. This plugin answers with the same fields from the running node
 * (name, cluster name and uuid, version of the server jar, tagline), so
 * clients that identify the server by GET / see what a distribution sends.
 */
public final class RootInfoPlugin extends Plugin implements ActionPlugin {
    private volatile ClusterService clusterService;

    @Override
    public Collection<?> createComponents(PluginServices services) {
        clusterService = services.clusterService();
        return List.of();
    }

    @Override
    public Collection<RestHandler> getRestHandlers(Settings settings, NamedWriteableRegistry registry, RestController controller,
            ClusterSettings clusterSettings, IndexScopedSettings indexScopedSettings, SettingsFilter settingsFilter,
            IndexNameExpressionResolver resolver, Supplier<DiscoveryNodes> nodes, Predicate<NodeFeature> features) {
        return List.of(new BaseRestHandler() {
            @Override
            public String getName() {
                return "main_action";
            }

            @Override
            public List<Route> routes() {
                return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
            }

            @Override
            protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
                return channel -> {
                    if (request.method() == RestRequest.Method.HEAD) {
                        channel.sendResponse(new RestResponse(RestStatus.OK, XContentBuilder.builder(
                            request.getXContentType() == null ? org.elasticsearch.xcontent.XContentType.JSON.xContent()
                                : request.getXContentType().xContent())));
                        return;
                    }
                    ClusterService cs = clusterService;
                    Build build = Build.current();
                    XContentBuilder b = channel.newBuilder();
                    b.startObject();
                    b.field("name", cs.getNodeName());
                    b.field("cluster_name", cs.getClusterName().value());
                    b.field("cluster_uuid", cs.state().metadata().clusterUUID());
                    b.startObject("version");
                    b.field("number", build.qualifiedVersion());
                    b.field("build_flavor", build.flavor());
                    b.field("build_type", build.type().displayName());
                    b.field("build_hash", build.hash());
                    b.field("build_date", build.date());
                    b.field("build_snapshot", build.isSnapshot());
                    b.field("lucene_version", org.apache.lucene.util.Version.LATEST.toString());
                    b.field("minimum_wire_compatibility_version", build.minWireCompatVersion());
                    b.field("minimum_index_compatibility_version", build.minIndexCompatVersion());
                    b.endObject();
                    b.field("tagline", "You Know, for Search");
                    b.endObject();
                    channel.sendResponse(new RestResponse(RestStatus.OK, b));
                };
            }
        });
    }
}
