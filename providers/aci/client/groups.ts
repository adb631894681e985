/**
 * The ACI calls the provider makes, each with its abort signal and its errors sorted into
 * provider errors (`./azure.ts`): create (the long-running PUT, not waited for: the status loop
 * follows the group's provisioning state), get, delete (waited for), list this resource group's
 * groups (every page), logs, exec, and the location's usage and capabilities.
 * @module
 */
import type { ContainerInstanceManagementClient } from "@azure/arm-containerinstance";
import { aciError, type ContainerGroup, statusOf } from "../azure.ts";
import type { AciConfig } from "../config.ts";

/** The location's quota and per-group maximum, as far as ACI reported them. */
export interface LocationLimits {
  /** Container groups allowed in the location, and in use. */
  groups?: { limit: number; used: number };
  /** Standard cores allowed, and in use. */
  cores?: { limit: number; used: number };
  /** The largest group, for the config's osType. */
  maxCpu?: number;
  maxMemoryInGB?: number;
}

/** Container group operations on one resource group. */
export class AciGroups {
  readonly #client: ContainerInstanceManagementClient;
  readonly #config: AciConfig;

  constructor(client: ContainerInstanceManagementClient, config: AciConfig) {
    this.#client = client;
    this.#config = config;
  }

  /** Sends the PUT; resolves with the group as ACI first answered (usually still Creating). */
  async create(name: string, group: ContainerGroup, signal?: AbortSignal) {
    try {
      const poller = await this.#client.containerGroups.beginCreateOrUpdate(
        this.#config.resourceGroup,
        name,
        group,
        { abortSignal: signal },
      );
      return poller.getOperationState().result ?? group;
    } catch (err) {
      throw aciError(`creating container group ${name}`, err);
    }
  }

  /** The group with its instance view, or `undefined` when ACI has none of that name. */
  async get(name: string, signal?: AbortSignal): Promise<ContainerGroup | undefined> {
    try {
      return await this.#client.containerGroups.get(this.#config.resourceGroup, name, {
        abortSignal: signal,
      });
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw aciError(`reading container group ${name}`, err);
    }
  }

  /** Deletes the group and waits until ACI has; a group already gone is fine. */
  async delete(name: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.#client.containerGroups.beginDeleteAndWait(this.#config.resourceGroup, name, {
        abortSignal: signal,
        updateIntervalInMs: 500,
      });
    } catch (err) {
      if (statusOf(err) === 404) return;
      throw aciError(`deleting container group ${name}`, err);
    }
  }

  /** Every group of the resource group (every page); the list has no instance views. */
  async list(signal?: AbortSignal): Promise<ContainerGroup[]> {
    const out: ContainerGroup[] = [];
    try {
      for await (
        const group of this.#client.containerGroups.listByResourceGroup(
          this.#config.resourceGroup,
          { abortSignal: signal },
        )
      ) out.push(group);
    } catch (err) {
      throw aciError(`listing the container groups of ${this.#config.resourceGroup}`, err);
    }
    return out;
  }

  /** The provider's ping: the first page of the resource group's groups, a cheap ARM read. */
  async ping(signal?: AbortSignal): Promise<void> {
    try {
      const pages = this.#client.containerGroups.listByResourceGroup(
        this.#config.resourceGroup,
        { abortSignal: signal },
      ).byPage();
      await pages.next();
    } catch (err) {
      throw aciError(`listing the container groups of ${this.#config.resourceGroup}`, err);
    }
  }

  /** A container's log (`Containers_ListLogs`). */
  async logs(
    name: string,
    container: string,
    options: { tail?: number; timestamps?: boolean; signal?: AbortSignal },
  ): Promise<string> {
    try {
      const out = await this.#client.containers.listLogs(
        this.#config.resourceGroup,
        name,
        container,
        { tail: options.tail, timestamps: options.timestamps, abortSignal: options.signal },
      );
      return out.content ?? "";
    } catch (err) {
      throw aciError(`reading the log of ${name}/${container}`, err);
    }
  }

  /** Starts a command (`Containers_ExecuteCommand`): the terminal WebSocket and its password. */
  async exec(
    name: string,
    container: string,
    request: { command: string; rows: number; cols: number },
    signal?: AbortSignal,
  ): Promise<{ webSocketUri: string; password: string }> {
    try {
      const out = await this.#client.containers.executeCommand(
        this.#config.resourceGroup,
        name,
        container,
        { command: request.command, terminalSize: { rows: request.rows, cols: request.cols } },
        { abortSignal: signal },
      );
      if (!out.webSocketUri || !out.password) {
        throw new Error("ACI answered without a WebSocket URI or password");
      }
      return { webSocketUri: out.webSocketUri, password: out.password };
    } catch (err) {
      throw aciError(`exec in ${name}/${container}`, err);
    }
  }

  /** The location's quota (`Location_ListUsage`) and per-group maximum (capabilities). */
  async limits(signal?: AbortSignal): Promise<LocationLimits> {
    const out: LocationLimits = {};
    const { location, osType } = this.#config;
    try {
      for await (
        const usage of this.#client.location.listUsage(location, { abortSignal: signal })
      ) {
        const entry = { limit: usage.limit ?? Infinity, used: usage.currentValue ?? 0 };
        if (usage.name?.value === "ContainerGroups") out.groups = entry;
        if (usage.name?.value === "StandardCores") out.cores = entry;
      }
      for await (
        const cap of this.#client.location.listCapabilities(location, { abortSignal: signal })
      ) {
        if (cap.osType !== osType || cap.gpu !== "None" || !cap.capabilities) continue;
        out.maxCpu = Math.max(out.maxCpu ?? 0, cap.capabilities.maxCpu ?? 0);
        out.maxMemoryInGB = Math.max(out.maxMemoryInGB ?? 0, cap.capabilities.maxMemoryInGB ?? 0);
      }
    } catch (err) {
      throw aciError(`reading the usage and capabilities of ${location}`, err);
    }
    return out;
  }
}
