import { describe, expect, it } from 'vitest';
import { readTracingSettings } from './otel-env.js';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };

describe('readTracingSettings (the OTEL_* variables)', () => {
  it('is off without an OTLP endpoint, with OTEL_SDK_DISABLED=true and with OTEL_TRACES_EXPORTER=none', () => {
    expect(readTracingSettings({})).toBeUndefined();
    expect(readTracingSettings({ ...ENDPOINT, OTEL_SDK_DISABLED: 'TRUE' })).toBeUndefined();
    expect(readTracingSettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  it('is on with either endpoint variable, http/protobuf by default as the specification says', () => {
    expect(readTracingSettings(ENDPOINT)?.protocol).toBe('http/protobuf');
    expect(
      readTracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }),
    ).toMatchObject({ protocol: 'http/protobuf' });
  });

  it('takes the traces protocol over the general one', () => {
    const env = {
      ...ENDPOINT,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    };
    expect(readTracingSettings(env)?.protocol).toBe('http/json');
  });

  it('stops the start on a protocol or exporter it cannot honour, naming the variable', () => {
    expect(() => readTracingSettings({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /^OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported/,
    );
    expect(() => readTracingSettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(
      /^OTEL_TRACES_EXPORTER/,
    );
  });
});
