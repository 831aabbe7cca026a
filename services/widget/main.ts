import { main } from '../../bin/process.js';
import { widgetService } from './index.js';

await main({ name: 'widget', services: [widgetService], workers: [] });
