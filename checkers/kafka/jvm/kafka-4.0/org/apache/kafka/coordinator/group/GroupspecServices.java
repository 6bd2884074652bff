package org.apache.kafka.coordinator.group;

import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetrics;

/**
 * The one door the groupspec driver needs into this package.  {@link GroupCoordinatorService.Builder#build()}
 * hard-wires a MultiThreadedEventProcessor (threads that run events whenever they get to them), so the driver
 * builds the {@link CoordinatorRuntime} itself, as that method does but with an event processor that runs each
 * event at once, and hands it to the service's constructor, which is package-private: hence this class, compiled
 * into Kafka's package (a split package is fine on a classpath).  It adds nothing to the service.
 */
public final class GroupspecServices {

    private GroupspecServices() {
    }

    public static GroupCoordinatorService create(
        LogContext logContext,
        GroupCoordinatorConfig config,
        CoordinatorRuntime<GroupCoordinatorShard, CoordinatorRecord> runtime,
        GroupCoordinatorMetrics metrics,
        GroupConfigManager groupConfigManager
    ) {
        return new GroupCoordinatorService(logContext, config, runtime, metrics, groupConfigManager);
    }
}
