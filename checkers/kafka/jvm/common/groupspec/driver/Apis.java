package groupspec.driver;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.apache.kafka.common.message.DeleteGroupsResponseData;
import org.apache.kafka.common.message.DescribeGroupsResponseData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.OffsetFetchResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DeleteGroupsRequest;
import org.apache.kafka.common.requests.DeleteGroupsResponse;
import org.apache.kafka.common.requests.DescribeGroupsRequest;
import org.apache.kafka.common.requests.DescribeGroupsResponse;
import org.apache.kafka.common.requests.HeartbeatRequest;
import org.apache.kafka.common.requests.HeartbeatResponse;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.requests.JoinGroupResponse;
import org.apache.kafka.common.requests.LeaveGroupRequest;
import org.apache.kafka.common.requests.LeaveGroupResponse;
import org.apache.kafka.common.requests.ListGroupsRequest;
import org.apache.kafka.common.requests.ListGroupsResponse;
import org.apache.kafka.common.requests.OffsetCommitRequest;
import org.apache.kafka.common.requests.OffsetCommitResponse;
import org.apache.kafka.common.requests.OffsetFetchRequest;
import org.apache.kafka.common.requests.OffsetFetchResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.SyncGroupRequest;
import org.apache.kafka.common.requests.SyncGroupResponse;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.coordinator.group.GroupCoordinator;

/**
 * What KafkaApis does with a group request before and after the coordinator: {@code handleJoinGroupRequest},
 * {@code handleSyncGroupRequest} and the rest of kafka.server.KafkaApis (3.9.2 and 4.0.2, whose group
 * handlers are the same but for ZooKeeper and inter-broker-protocol checks a KRaft broker never makes),
 * for a broker where every request is authorized and every topic exists.  Kept to their order and their
 * error paths: a coordinator's failed future becomes the request's own error response
 * ({@code getErrorResponse}), and each response is built with the class KafkaApis builds it with (some
 * apply per-version rules in their constructors).
 */
final class Apis {

    private Apis() {
    }

    static CompletableFuture<AbstractResponse> handle(GroupCoordinator gc, RequestContext ctx, AbstractRequest req) {
        short version = ctx.apiVersion();
        BufferSupplier buffers = BufferSupplier.NO_CACHING;
        switch (ctx.header.apiKey()) {
            case JOIN_GROUP: {
                JoinGroupRequest r = (JoinGroupRequest) req;
                return answer(r, gc.joinGroup(ctx, r.data(), buffers), d -> new JoinGroupResponse(d, version));
            }
            case SYNC_GROUP: {
                SyncGroupRequest r = (SyncGroupRequest) req;
                if (!r.areMandatoryProtocolTypeAndNamePresent()) {
                    // "Starting from version 5, ProtocolType and ProtocolName fields are mandatory."
                    return CompletableFuture.completedFuture(r.getErrorResponse(Errors.INCONSISTENT_GROUP_PROTOCOL.exception()));
                }
                return answer(r, gc.syncGroup(ctx, r.data(), buffers), SyncGroupResponse::new);
            }
            case HEARTBEAT: {
                HeartbeatRequest r = (HeartbeatRequest) req;
                return answer(r, gc.heartbeat(ctx, r.data()), HeartbeatResponse::new);
            }
            case LEAVE_GROUP: {
                LeaveGroupRequest r = (LeaveGroupRequest) req;
                return answer(r, gc.leaveGroup(ctx, r.normalizedData()), d -> new LeaveGroupResponse(d, version));
            }
            case OFFSET_COMMIT:
                return commit(gc, ctx, (OffsetCommitRequest) req, buffers);
            case OFFSET_FETCH:
                return fetch(gc, ctx, (OffsetFetchRequest) req);
            case DESCRIBE_GROUPS: {
                DescribeGroupsRequest r = (DescribeGroupsRequest) req;
                return answer(r, gc.describeGroups(ctx, r.data().groups()),
                    groups -> new DescribeGroupsResponse(new DescribeGroupsResponseData().setGroups(groups)));
            }
            case LIST_GROUPS: {
                ListGroupsRequest r = (ListGroupsRequest) req;
                return answer(r, gc.listGroups(ctx, r.data()), ListGroupsResponse::new);
            }
            case DELETE_GROUPS:
                return delete(gc, ctx, (DeleteGroupsRequest) req, buffers);
            default:
                throw new IllegalArgumentException("not a group API: " + ctx.header.apiKey());
        }
    }

    private static <D> CompletableFuture<AbstractResponse> answer(
        AbstractRequest r, CompletableFuture<D> future, java.util.function.Function<D, AbstractResponse> build) {
        return future.handle((data, e) -> e != null ? r.getErrorResponse(unwrap(e)) : build.apply(data));
    }

    /** handleOffsetCommitRequest: a request with no partitions is answered without the coordinator. */
    private static CompletableFuture<AbstractResponse> commit(
        GroupCoordinator gc, RequestContext ctx, OffsetCommitRequest r, BufferSupplier buffers) {
        OffsetCommitResponse.Builder builder = new OffsetCommitResponse.Builder();
        List<OffsetCommitRequestData.OffsetCommitRequestTopic> topics = new ArrayList<>();
        for (OffsetCommitRequestData.OffsetCommitRequestTopic topic : r.data().topics()) {
            if (!topic.partitions().isEmpty()) {
                topics.add(new OffsetCommitRequestData.OffsetCommitRequestTopic().setName(topic.name())
                    .setPartitions(new ArrayList<>(topic.partitions())));
            }
        }
        if (topics.isEmpty()) {
            return CompletableFuture.completedFuture(builder.build());
        }
        OffsetCommitRequestData data = new OffsetCommitRequestData()
            .setGroupId(r.data().groupId())
            .setMemberId(r.data().memberId())
            .setGenerationIdOrMemberEpoch(r.data().generationIdOrMemberEpoch())
            .setRetentionTimeMs(r.data().retentionTimeMs())
            .setGroupInstanceId(r.data().groupInstanceId())
            .setTopics(topics);
        return gc.commitOffsets(ctx, data, buffers).handle((results, e) ->
            e != null ? r.getErrorResponse(unwrap(e)) : builder.merge(results).build());
    }

    /** handleOffsetFetchRequestFromCoordinator: each group of the batch on its own, then one response. */
    private static CompletableFuture<AbstractResponse> fetch(GroupCoordinator gc, RequestContext ctx, OffsetFetchRequest r) {
        List<CompletableFuture<OffsetFetchResponseData.OffsetFetchResponseGroup>> futures = new ArrayList<>();
        for (OffsetFetchRequestData.OffsetFetchRequestGroup g : r.groups()) {
            CompletableFuture<OffsetFetchResponseData.OffsetFetchResponseGroup> f = g.topics() == null
                ? gc.fetchAllOffsets(ctx, g, r.requireStable())
                : gc.fetchOffsets(ctx, new OffsetFetchRequestData.OffsetFetchRequestGroup()
                    .setGroupId(g.groupId()).setMemberId(g.memberId()).setMemberEpoch(g.memberEpoch())
                    .setTopics(g.topics()), r.requireStable());
            futures.add(f.handle((resp, e) -> e != null
                ? OffsetFetchResponse.groupError(g, Errors.forException(unwrap(e)), ctx.apiVersion()) : resp));
        }
        return CompletableFuture.allOf(futures.toArray(new CompletableFuture[0])).handle((v, e) -> {
            List<OffsetFetchResponseData.OffsetFetchResponseGroup> groups = new ArrayList<>();
            for (CompletableFuture<OffsetFetchResponseData.OffsetFetchResponseGroup> f : futures) {
                groups.add(f.join());
            }
            return new OffsetFetchResponse(groups, ctx.apiVersion());
        });
    }

    /** handleDeleteGroupsRequest: the ids without duplicates; a failed future fails every group with its error. */
    private static CompletableFuture<AbstractResponse> delete(
        GroupCoordinator gc, RequestContext ctx, DeleteGroupsRequest r, BufferSupplier buffers) {
        List<String> groups = new ArrayList<>(new LinkedHashSet<>(r.data().groupsNames()));
        return gc.deleteGroups(ctx, groups, buffers).handle((results, e) -> {
            DeleteGroupsResponseData response = new DeleteGroupsResponseData();
            if (e != null) {
                Errors error = Errors.forException(unwrap(e));
                for (String g : groups) {
                    response.results().add(new DeleteGroupsResponseData.DeletableGroupResult()
                        .setGroupId(g).setErrorCode(error.code()));
                }
            } else {
                response.setResults(results);
            }
            return new DeleteGroupsResponse(response);
        });
    }

    /** A CompletableFuture's stage wraps what failed it in a CompletionException. */
    static Throwable unwrap(Throwable e) {
        while (e instanceof java.util.concurrent.CompletionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }
}
