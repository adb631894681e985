/**
 * CloudWatch Logs' FilterLogEvents as the log mirror's batched read uses it
 * (`../streams/log_batch.ts`): one interface of our own, so tests count calls or answer with
 * ThrottlingException without an SDK in between.
 * @module
 */
import {
  type CloudWatchLogsClient,
  FilterLogEventsCommand,
  type FilterLogEventsCommandInput,
  type FilterLogEventsCommandOutput,
} from "@aws-sdk/client-cloudwatch-logs";

/** The one call the batched read makes. */
export interface FilterLogEventsApi {
  /** FilterLogEvents as the SDK sends it. */
  filterLogEvents(
    input: FilterLogEventsCommandInput,
    signal?: AbortSignal,
  ): Promise<FilterLogEventsCommandOutput>;
}

/** The most stream names one FilterLogEvents takes (`logStreamNames`, botocore's logs model). */
export const MAX_STREAM_NAMES = 100;

/** {@link FilterLogEventsApi} through the SDK's client. */
export function filterLogEventsApi(client: CloudWatchLogsClient): FilterLogEventsApi {
  return {
    filterLogEvents: (input, signal) =>
      client.send(new FilterLogEventsCommand(input), { abortSignal: signal }),
  };
}
