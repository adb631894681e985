/**
 * The ECI API as the provider uses it: Alibaba's own Node SDK (`@alicloud/eci20180808` on
 * `@alicloud/openapi-client`, RPC style, API version 2018-08-08) with credentials from its
 * default chain (environment, credentials file, RAM role, OIDC for RRSA), every call through
 * {@link withRetry}. Batches where ECI takes lists: at most 20 group IDs per describe.
 * @module
 */
import * as eci from "@alicloud/eci20180808";
import * as openapi from "@alicloud/openapi-client";
import * as credentials from "@alicloud/credentials";
import type { Clock } from "../../../provider/mod.ts";
import type { EciConfig } from "../config.ts";
import { TAGS } from "../request/names.ts";
import { withRetry } from "./retry.ts";

/** A container group as DescribeContainerGroups shows it. */
export type ContainerGroup = eci.DescribeContainerGroupsResponseBodyContainerGroups;
/** One event of a group (DescribeContainerGroupEvents). */
export type GroupEvent = eci.DescribeContainerGroupEventsResponseBodyDataEvents;
/** One metric sample of a group (DescribeContainerGroupMetric). */
export type MetricRecord = eci.DescribeContainerGroupMetricResponseBodyRecords;
/** The create request's shape, without the parts {@link EciApi.create} fills in. */
export type CreateRequest = ConstructorParameters<typeof eci.CreateContainerGroupRequest>[0];

/** ECI takes at most this many group IDs in one describe. */
export const DESCRIBE_BATCH = 20;

/** What {@link EciApi.log} asks for (DescribeContainerLog). */
export interface LogQuery {
  groupId: string;
  container: string;
  tail?: number;
  sinceSeconds?: number;
  /** RFC 3339. */
  startTime?: string;
  limitBytes?: number;
  timestamps?: boolean;
  /** The previous instance's log (ECI's `LastTime`). */
  previous?: boolean;
}

/** The calls the provider makes; a fake in unit tests. */
export class EciApi {
  readonly #client: InstanceType<typeof eci.default.default>;
  readonly #config: EciConfig;
  readonly #clock: Clock;

  constructor(config: EciConfig, clock: Clock) {
    this.#config = config;
    this.#clock = clock;
    const url = config.endpoint ? new URL(config.endpoint) : undefined;
    this.#client = new eci.default.default(
      new openapi.Config({
        regionId: config.regionId,
        endpoint: url?.host,
        protocol: url?.protocol.replace(":", ""),
        credential: new credentials.default.default(),
        readTimeout: 20_000,
        connectTimeout: 5_000,
      }),
    );
  }

  #call<T>(what: string, call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return withRetry(what, call, { clock: this.#clock, signal });
  }

  /** CreateContainerGroup; the new group's ID. The `clientToken` makes a retried create one. */
  async create(request: CreateRequest, signal?: AbortSignal): Promise<string> {
    const body = new eci.CreateContainerGroupRequest({
      ...request,
      regionId: this.#config.regionId,
      zoneId: this.#config.zoneId,
      // A pod's k8s.aliyun.com/eci-vswitch and eci-security-group win over the config's.
      vSwitchId: request?.vSwitchId ?? this.#config.vSwitchId,
      securityGroupId: request?.securityGroupId ?? this.#config.securityGroupId,
      resourceGroupId: this.#config.resourceGroupId,
    });
    const answer = await this.#call(
      `CreateContainerGroup ${request?.containerGroupName}`,
      () => this.#client.createContainerGroup(body),
      signal,
    );
    return answer.body?.containerGroupId ?? "";
  }

  /** DescribeContainerGroups for these IDs, in batches; groups ECI no longer has are missing. */
  async describe(ids: string[], signal?: AbortSignal): Promise<Map<string, ContainerGroup>> {
    const found = new Map<string, ContainerGroup>();
    for (let i = 0; i < ids.length; i += DESCRIBE_BATCH) {
      const batch = ids.slice(i, i + DESCRIBE_BATCH);
      const request = new eci.DescribeContainerGroupsRequest({
        regionId: this.#config.regionId,
        containerGroupIds: JSON.stringify(batch),
        limit: DESCRIBE_BATCH,
      });
      const answer = await this.#call(
        "DescribeContainerGroups",
        () => this.#client.describeContainerGroups(request),
        signal,
      );
      for (const g of answer.body?.containerGroups ?? []) found.set(g.containerGroupId ?? "", g);
    }
    return found;
  }

  /** Every group tagged with this node (for adoption), page by page. */
  async listForNode(nodeName: string, signal?: AbortSignal): Promise<ContainerGroup[]> {
    const out: ContainerGroup[] = [];
    let nextToken: string | undefined;
    do {
      const request = new eci.DescribeContainerGroupsRequest({
        regionId: this.#config.regionId,
        limit: DESCRIBE_BATCH,
        nextToken,
        tag: [new eci.DescribeContainerGroupsRequestTag({ key: TAGS.node, value: nodeName })],
      });
      const answer = await this.#call(
        "DescribeContainerGroups by tag",
        () => this.#client.describeContainerGroups(request),
        signal,
      );
      out.push(...(answer.body?.containerGroups ?? []));
      nextToken = answer.body?.nextToken || undefined;
    } while (nextToken);
    return out;
  }

  /** DeleteContainerGroup; a group already gone is not an error. */
  async delete(groupId: string, signal?: AbortSignal): Promise<void> {
    const request = new eci.DeleteContainerGroupRequest({
      regionId: this.#config.regionId,
      containerGroupId: groupId,
    });
    await this.#call(
      `DeleteContainerGroup ${groupId}`,
      () => this.#client.deleteContainerGroup(request),
      signal,
    ).catch((err) => {
      if ((err as Error).name !== "NotFoundError") throw err;
    });
  }

  /** DescribeContainerGroupEvents for these IDs, in batches, by group ID. */
  async events(ids: string[], signal?: AbortSignal): Promise<Map<string, GroupEvent[]>> {
    const out = new Map<string, GroupEvent[]>();
    for (let i = 0; i < ids.length; i += DESCRIBE_BATCH) {
      const request = new eci.DescribeContainerGroupEventsRequest({
        regionId: this.#config.regionId,
        containerGroupIds: JSON.stringify(ids.slice(i, i + DESCRIBE_BATCH)),
      });
      const answer = await this.#call(
        "DescribeContainerGroupEvents",
        () => this.#client.describeContainerGroupEvents(request),
        signal,
      );
      for (const d of answer.body?.data ?? []) out.set(d.containerGroupId ?? "", d.events ?? []);
    }
    return out;
  }

  /** DescribeContainerLog: the log text ECI returns for the query. */
  async log(query: LogQuery, signal?: AbortSignal): Promise<string> {
    const request = new eci.DescribeContainerLogRequest({
      regionId: this.#config.regionId,
      containerGroupId: query.groupId,
      containerName: query.container,
      tail: query.tail,
      sinceSeconds: query.sinceSeconds,
      startTime: query.startTime,
      limitBytes: query.limitBytes,
      timestamps: query.timestamps,
      lastTime: query.previous,
    });
    const answer = await this.#call(
      `DescribeContainerLog ${query.groupId}/${query.container}`,
      () => this.#client.describeContainerLog(request),
      signal,
    );
    return answer.body?.content ?? "";
  }

  /** ExecContainerCommand: the WebSocket URL of the session ECI opened. */
  async exec(
    groupId: string,
    container: string,
    command: string[],
    options: { stdin: boolean; tty: boolean; signal?: AbortSignal },
  ): Promise<string> {
    const request = new eci.ExecContainerCommandRequest({
      regionId: this.#config.regionId,
      containerGroupId: groupId,
      containerName: container,
      command: JSON.stringify(command),
      stdin: options.stdin,
      TTY: options.tty,
    });
    const answer = await this.#call(
      `ExecContainerCommand ${groupId}/${container}`,
      () => this.#client.execContainerCommand(request),
      options.signal,
    );
    return answer.body?.webSocketUri ?? "";
  }

  /** DescribeContainerGroupMetric: the group's recent samples, oldest first. */
  async metric(groupId: string, signal?: AbortSignal): Promise<MetricRecord[]> {
    const request = new eci.DescribeContainerGroupMetricRequest({
      regionId: this.#config.regionId,
      containerGroupId: groupId,
    });
    const answer = await this.#call(
      `DescribeContainerGroupMetric ${groupId}`,
      () => this.#client.describeContainerGroupMetric(request),
      signal,
    );
    return answer.body?.records ?? [];
  }

  /** A cheap authenticated call: one page of one group. */
  async ping(signal?: AbortSignal): Promise<void> {
    const request = new eci.DescribeContainerGroupsRequest({
      regionId: this.#config.regionId,
      limit: 1,
    });
    await this.#call(
      "DescribeContainerGroups",
      () => this.#client.describeContainerGroups(request),
      signal,
    );
  }
}
