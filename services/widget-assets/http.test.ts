import { describe, expect, it } from 'vitest';
import { acceptsGzip, notModified } from './http.js';

describe('acceptsGzip', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['gzip', true],
    ['GZIP', true],
    ['gzip, deflate, br', true],
    ['br;q=1.0, gzip;q=0.8', true],
    ['gzip;q=0', false],
    ['gzip; q=0.000', false],
    ['identity', false],
    ['*', true],
    ['*;q=0', false],
    ['*, gzip;q=0', false],
    ['x-gzip', true],
    ['gzip;q=abc', false],
    ['deflate, br', false],
  ])('%j -> %s', (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });
});

describe('notModified', () => {
  const tags = ['"abc"', '"abc-gz"'];
  it.each([
    [undefined, false],
    ['"abc"', true],
    ['"abc-gz"', true],
    ['W/"abc"', true],
    ['"other", "abc"', true],
    ['*', true],
    ['"abcd"', false],
    ['"other"', false],
  ])('%j -> %s', (header, expected) => {
    expect(notModified(header, tags)).toBe(expected);
  });
});
