import { describe, expect, it } from 'vitest';
import { toYaml } from './yaml';

describe('toYaml', () => {
  it('writes a manifest in block style, quoting what YAML would misread', () => {
    const obj = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', labels: { app: 'web', version: '1.0', on: 'yes' }, annotations: {} },
      spec: {
        replicas: 2,
        paused: false,
        template: { spec: { containers: [{ name: 'web', image: 'nginx:1.27', args: ['--port', '8080'], env: [] }] } },
      },
      data: { 'config.yaml': 'a: 1\nb: 2\n', empty: '', colon: 'key: value' },
    };
    expect(toYaml(obj)).toBe(
      [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata:',
        '  name: web',
        '  labels:',
        '    app: web',
        '    version: "1.0"',
        '    "on": "yes"',
        '  annotations: {}',
        'spec:',
        '  replicas: 2',
        '  paused: false',
        '  template:',
        '    spec:',
        '      containers:',
        '      - name: web',
        '        image: nginx:1.27',
        '        args:',
        '        - --port',
        '        - "8080"',
        '        env: []',
        'data:',
        '  config.yaml: |',
        '    a: 1',
        '    b: 2',
        '  empty: ""',
        '  colon: "key: value"',
        '',
      ].join('\n'),
    );
  });
});
