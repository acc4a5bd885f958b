package org.elasticsearch.node;

import java.util.Collection;

import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.plugins.MockPluginsService;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.plugins.PluginsService;

/**
 * A real Elasticsearch 8 node that loads its plugins from the classpath.
 *
 * Elasticsearch 8 dropped Node's constructor that took classpath plugins; the
 * test framework's MockNode has one but starts ESTestCase (which refuses to
 * run as root and installs test-only hooks). This class does only what MockNode
 * does for plugins: it lives in Node's package to reach the package-private
 * NodeConstruction and NodeServiceProvider, and hands the node the test
 * framework's MockPluginsService (plugins from classes, no plugin directory).
 * Every other service is the production one.
 */
public final class ClasspathPluginsNode extends Node {
    public ClasspathPluginsNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
        super(NodeConstruction.prepareConstruction(env, new NodeServiceProvider() {
            @Override
            PluginsService newPluginService(Environment environment, Settings settings) {
                return new MockPluginsService(settings, environment, plugins);
            }
        }, true));
    }
}
