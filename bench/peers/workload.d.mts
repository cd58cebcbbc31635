/** Types of workload.mjs, for the TypeScript driver (parley-driver.ts). */
export declare function stepText(session: number, step: number): string;
export interface Workload {
  sessions: number;
  steps: number;
  warmup?: number;
  prepare: (session: number) => Promise<unknown>;
  step: (session: number, step: number, text: string) => Promise<unknown>;
}
export interface WorkloadResult {
  latencies: number[];
  wallMs: number;
}
export declare function runWorkload(workload: Workload): Promise<WorkloadResult>;
export interface DriverOptions {
  sessions: number;
  steps: number;
  url?: string;
  schema?: string;
  dir?: string;
}
export declare function driverArguments(): { system: string; options: DriverOptions };
export declare function report(system: string, result: WorkloadResult, notes?: string[]): void;
